"""N worker threads on the native target (docs/steering.md): DPDK-style run to completion per
core.  A steering program (microblocks/rss.mbl, flow_director.mbl) or the caller gives each
packet a queue; queue q belongs to worker q mod N; each worker runs its own replica of the
program (the same JIT code) over its queue's packets in arrival order, on its own thread.
A flow always maps to one queue, so per-flow order holds; packets of different workers are
not ordered with respect to each other.

The JIT call releases the GIL, so workers run in parallel on host cores; packets are laid
out once per run (lay_out) and the threads only call the native batch driver.  The N - 1
helper threads are started once, with the pool, and wait for work between runs (DPDK
launches its lcores once too); the caller's thread is worker 0.

Memories: a memory space the program's data plane never writes (no store, no counter or
register add into it: `written_spaces`) is one copy shared by all workers, as DPDK's lcores
share one rte_lpm or hash table; a space it writes (counters, registers, per-flow state) is
a copy per worker, like per-lcore statistics.  The control plane changes every worker
(`each`); on a shared space a change then runs once per worker on the same words, so it must
give the same words each time (table_add, write and the runtime's table loaders do).  A
counter's value is the sum over workers (read_total)."""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from .lower import SPACE_IDS, lower
from .native import (
    BATCH_FRAMES,
    MAX_PACKET_BYTES,
    NativeError,
    NativeProgram,
    Verdict,
    _slot_bytes,
)
from .sema import Program
from .types import MEDIA_EOP, MEDIA_SOP

WRITES = frozenset({"npu.mem.write", "npu.mem.add"})  # the data plane's memory writes


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
class WorkerTiming:
    """One worker in one execute: when it began and ended its batches (seconds after execute
    was called, perf_counter) and the CPU time its thread spent on them (thread_time)."""

    packets: int
    start: float
    end: float
    cpu: float


@dataclass(frozen=True)
class WorkerRun:
    verdicts: list[Verdict]  # in input order
    order: list[list[int]]  # per worker: input positions in the order it processed them


def steer(steering: NativeProgram, packets: Sequence[bytes],
          in_ports: Sequence[int]) -> list[Verdict]:
    """Run a steering program (forward with meta.queue set, or drop): the NIC's part."""
    return steering.run(list(packets), list(in_ports))


def written_spaces(program: Program) -> frozenset[str]:
    """The memory spaces the program's data plane writes (a store into a memory, or a counter
    or register add), from its lowered code; the other spaces it only reads."""
    names = {number: space for space, number in SPACE_IDS.items()}
    written = set()
    for function in lower(program).functions:
        for block in function.blocks:
            for instr in block.instructions:
                if isinstance(instr, ir.CallInstr) and instr.callee.name in WRITES:
                    written.add(names[instr.args[1].constant])  # lower gives a constant
    return frozenset(written)


def _serve(jobs: queue.SimpleQueue, done: queue.SimpleQueue) -> None:
    """A helper thread: run each job given, report its result or exception; None stops it.
    It holds no reference to the pool, so a pool nobody uses can be collected (and stops
    its threads)."""
    while True:
        job = jobs.get()
        if job is None:
            return
        try:
            result = job()
        except BaseException as e:  # noqa: BLE001 -- re-raised in the caller's thread
            result = e
        del job  # the job refers to the pool: do not keep it while waiting
        done.put(result)
        del result


def _stop(helpers: list[tuple[threading.Thread, queue.SimpleQueue, queue.SimpleQueue]]) -> None:
    for _, jobs, _ in helpers:
        jobs.put(None)
    for thread, _, _ in helpers:
        if thread is not threading.current_thread():
            thread.join()


class NativeWorkers:
    """A program replicated over `workers` threads (worker 0: the caller's thread).

    `share`: spaces the data plane never writes are one copy for all workers (the
    default); False gives every worker a copy of every space."""

    def __init__(self, program: NativeProgram, workers: int, share: bool = True) -> None:
        if workers < 1:
            raise NativeError(f"{workers} workers: at least 1")
        self.shared: frozenset[str] = frozenset()
        if share and workers > 1:
            self.shared = frozenset(program.memory) - written_spaces(program.program)
        self.programs = [program, *(program.replica() for _ in range(workers - 1))]
        for replica in self.programs[1:]:
            for space in self.shared:
                replica.memory[space] = program.memory[space]
        self._helpers = []
        for w in range(1, workers):
            jobs: queue.SimpleQueue = queue.SimpleQueue()
            done: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=_serve, args=(jobs, done), daemon=True,
                                      name=f"npkit-worker-{w}")
            thread.start()
            self._helpers.append((thread, jobs, done))
        self._finalizer = weakref.finalize(self, _stop, self._helpers)

    @property
    def threads(self) -> list[threading.Thread]:
        """The helper threads (workers 1..N-1)."""
        return [thread for thread, _, _ in self._helpers]

    def close(self) -> None:
        """Stop the helper threads (also done when the pool is collected, or at exit)."""
        self._finalizer()

    def __enter__(self) -> NativeWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def workers(self) -> int:
        return len(self.programs)

    def each(self, change: Callable[[NativeProgram], None]) -> None:
        """Apply a control-plane change (table_add, write, a runtime loader) to every
        worker's memories."""
        for program in self.programs:
            change(program)

    def read_total(self, name: str, index: int) -> int:
        """A counter summed over the workers (wrapping at 32 bits, as the counter does); a
        memory in a shared space has one value, counted once."""
        programs = self.programs[:1] if self.programs[0]._mem(name).space in self.shared \
            else self.programs
        return sum(p.read(name, index) for p in programs) & 0xFFFFFFFF

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

    def execute(self, plan: Plan) -> list[WorkerTiming]:
        """Run every worker's batches on its own thread (in place); returns when all end,
        with each worker's timing."""
        if not self._finalizer.alive:
            raise NativeError("the workers were closed")
        began = time.perf_counter()

        def work(w: int) -> WorkerTiming:
            start, cpu = time.perf_counter(), time.thread_time()
            for b in plan.batches[w]:
                self.programs[w].run_laid_out(b.buf, b.lens, b.metas)
            cpu = time.thread_time() - cpu
            return WorkerTiming(sum(len(b.indices) for b in plan.batches[w]),
                                start - began, time.perf_counter() - began, cpu)

        for w, (_, jobs, _) in enumerate(self._helpers, 1):
            jobs.put(lambda w=w: work(w))
        results: list[WorkerTiming | BaseException] = []
        try:
            results.append(work(0))  # the caller's thread is worker 0
        except BaseException as e:  # noqa: BLE001 -- raised after the helpers end
            results.append(e)
        results.extend(done.get() for _, _, done in self._helpers)
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return results  # type: ignore[return-value]

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
