"""N worker threads on the native target (docs/steering.md): DPDK-style run to completion per
core.  A steering program (microblocks/rss.mbl, flow_director.mbl) or the caller gives each
packet a queue; queue q belongs to worker q mod N; each worker runs its own replica of the
program (the same JIT code, its own memories) over its queue's packets in arrival order, on
its own thread.  A flow always maps to one queue, so per-flow order holds; packets of
different workers are not ordered with respect to each other.

The JIT call releases the GIL, so workers run in parallel on host cores; packets are laid
out once per run (lay_out) and the threads only call the native batch driver.

Memories: each replica has its own copy (tables, arrays, counters), like per-core tables and
per-core statistics in DPDK.  The control plane changes all of them (each), and a counter's
value is the sum over workers (read_total)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .native import (
    BATCH_FRAMES,
    MAX_PACKET_BYTES,
    NativeError,
    NativeProgram,
    Verdict,
    _slot_bytes,
)
from .types import MEDIA_EOP, MEDIA_SOP


@dataclass
class LaidOutBatch:
    """One batch of one worker: the input positions of its packets and their buffers."""

    indices: list[int]
    buf: np.ndarray
    lens: np.ndarray
    metas: np.ndarray

    def fresh(self) -> LaidOutBatch:
        """A copy to run on (programs rewrite packets and metadata in place)."""
        return LaidOutBatch(self.indices, self.buf.copy(), self.lens, self.metas.copy())


@dataclass
class Plan:
    """Every worker's batches, in the order the worker runs them."""

    batches: list[list[LaidOutBatch]]
    count: int  # packets in the run
    steered: dict[int, Verdict] = field(default_factory=dict)  # dropped before any worker

    def fresh(self) -> Plan:
        return Plan([[b.fresh() for b in w] for w in self.batches], self.count, self.steered)


@dataclass(frozen=True)
class WorkerRun:
    verdicts: list[Verdict]  # in input order
    order: list[list[int]]  # per worker: input positions in the order it processed them


def steer(steering: NativeProgram, packets: Sequence[bytes],
          in_ports: Sequence[int]) -> list[Verdict]:
    """Run a steering program (forward with meta.queue set, or drop): the NIC's part."""
    return steering.run(list(packets), list(in_ports))


class NativeWorkers:
    """A program replicated over `workers` threads."""

    def __init__(self, program: NativeProgram, workers: int) -> None:
        if workers < 1:
            raise NativeError(f"{workers} workers: at least 1")
        self.programs = [program, *(program.replica() for _ in range(workers - 1))]

    @property
    def workers(self) -> int:
        return len(self.programs)

    def each(self, change: Callable[[NativeProgram], None]) -> None:
        """Apply a control-plane change (table_add, write, a runtime loader) to every
        worker's memories."""
        for program in self.programs:
            change(program)

    def read_total(self, name: str, index: int) -> int:
        """A counter summed over the workers (wrapping at 32 bits, as the counter does)."""
        return sum(p.read(name, index) for p in self.programs) & 0xFFFFFFFF

    def worker_of(self, queue: int) -> int:
        return queue % self.workers

    def lay_out(self, packets: Sequence[bytes], in_ports: Sequence[int],
                steering: Sequence[Verdict] | Sequence[int]) -> Plan:
        """Split the packets by queue (a Verdict from steer, or a queue number) into each
        worker's batches, in arrival order.  Packets the steering dropped go to no worker."""
        if not len(packets) == len(in_ports) == len(steering):
            raise NativeError("packets, in_ports and steering differ in length")
        mine: list[list[int]] = [[] for _ in self.programs]
        dropped: dict[int, Verdict] = {}
        for i, s in enumerate(steering):
            if isinstance(s, Verdict):
                if s.kind != "forward":
                    dropped[i] = s
                    continue
                s = s.queue
            mine[self.worker_of(s)].append(i)
        plan = Plan([[] for _ in self.programs], len(packets), dropped)
        whole = MEDIA_SOP | MEDIA_EOP
        for w, indices in enumerate(mine):
            for start in range(0, len(indices), BATCH_FRAMES):
                chunk = indices[start:start + BATCH_FRAMES]
                items = [(packets[i], in_ports[i], whole) for i in chunk]
                if any(len(p) > MAX_PACKET_BYTES for p, _, _ in items):
                    raise NativeError(f"a packet over {MAX_PACKET_BYTES:,} bytes")
                stride = max(_slot_bytes(len(p)) for p, _, _ in items)
                buf, lens, metas = self.programs[w].lay_out(items, stride)
                plan.batches[w].append(LaidOutBatch(chunk, buf, lens, metas))
        return plan

    def execute(self, plan: Plan) -> None:
        """Run every worker's batches on its own thread (in place); returns when all end."""
        errors: list[BaseException] = []

        def work(w: int) -> None:
            try:
                for b in plan.batches[w]:
                    self.programs[w].run_laid_out(b.buf, b.lens, b.metas)
            except BaseException as e:  # noqa: BLE001 -- re-raised in the caller's thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(w,), name=f"npkit-worker-{w}")
                   for w in range(1, self.workers)]
        for t in threads:
            t.start()
        work(0)  # the caller's thread is worker 0
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def collect(self, plan: Plan) -> WorkerRun:
        """The verdicts of a plan that ran, in input order, and each worker's order."""
        verdicts: list[Verdict | None] = [None] * plan.count
        for i, v in plan.steered.items():
            verdicts[i] = v
        order: list[list[int]] = []
        for w, batches in enumerate(plan.batches):
            done: list[int] = []
            for b in batches:
                for i, v in zip(b.indices, self.programs[w].verdicts(b.buf, b.metas),
                                strict=True):
                    verdicts[i] = v
                done.extend(b.indices)
            order.append(done)
        return WorkerRun([v for v in verdicts if v is not None], order)

    def run(self, packets: Sequence[bytes], in_ports: Sequence[int] | int,
            steering: Sequence[Verdict] | Sequence[int]) -> WorkerRun:
        """lay_out, execute, collect."""
        ports = [in_ports] * len(packets) if isinstance(in_ports, int) else list(in_ports)
        plan = self.lay_out(packets, ports, steering)
        self.execute(plan)
        return self.collect(plan)
