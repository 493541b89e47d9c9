"""Running a suite's independent tasks (one per size, test or family) serially or as
dask.distributed tasks.

A task is a module-level function applied to one picklable item (the item carries its own
configuration and seed), so where it runs cannot change what it returns: the results come
back in the items' order whether they ran in this process, on a LocalCluster or on a
cluster given by address.  That is what makes a sweep's JSON byte-identical to a serial
run's.  Each task builds what it needs (e.g. its device) from the item; nothing is shared
between tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from npkit.bench.lab.errors import LabConfigError

Item = TypeVar("Item")
Result = TypeVar("Result")
Progress = Callable[[int, int], None]  # (tasks done, tasks in all)


@dataclass(frozen=True)
class Where:
    """Where tasks run: ``serial`` (this process), ``local`` (a dask LocalCluster of
    ``workers`` single-threaded worker processes, made for the sweep and closed after it)
    or a dask scheduler ``address`` (``tcp://host:8786``)."""

    kind: str = "serial"
    workers: int = 2
    address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("serial", "local", "address"):
            raise LabConfigError(f"unknown place to run tasks '{self.kind}': "
                                 "use serial, local or address")
        if self.kind == "address" and not self.address:
            raise LabConfigError("a scheduler address is needed, e.g. tcp://host:8786")
        if self.workers < 1:
            raise LabConfigError(f"workers must be >= 1, got {self.workers}")

    @classmethod
    def parse(cls, scheduler: str | None, workers: int | None = None) -> Where:
        """From CLI values: ``local`` -> LocalCluster, an address -> that scheduler,
        ``serial`` -> one process; no scheduler -> serial, unless more than one worker is
        asked for, which means a LocalCluster of that many (asking for workers and getting
        one process would be a silent surprise)."""
        if scheduler is None:
            scheduler = "local" if workers is not None and workers > 1 else "serial"
        count = 2 if workers is None else workers
        if scheduler == "serial":
            return cls("serial", count)
        if scheduler == "local":
            return cls("local", count)
        return cls("address", count, scheduler)


def run_tasks(task: Callable[[Item], Result], items: Sequence[Item], where: Where = Where(),
              progress: Progress | None = None) -> list[Result]:
    """``[task(item) for item in items]``, run where ``where`` says, in the items' order."""
    if where.kind == "serial":
        results = []
        for done, item in enumerate(items, 1):
            results.append(task(item))
            if progress:
                progress(done, len(items))
        return results
    return _run_on_dask(task, items, where, progress)


def _run_on_dask(task: Callable[[Item], Result], items: Sequence[Item], where: Where,
                 progress: Progress | None) -> list[Result]:
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if where.kind == "local":
        cluster = LocalCluster(n_workers=where.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(where.address)
    try:
        # pure=False: two equal items are still two runs (a sweep may repeat a trial)
        futures = client.map(task, list(items), pure=False)
        if progress:
            for done, _ in enumerate(as_completed(futures), 1):
                progress(done, len(futures))
        return client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
