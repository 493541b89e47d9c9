"""The fuzz stage's worker process: it compiles, assembles and runs what it is sent, in a
process of its own, so that an abort (SIGABRT, SIGSEGV, LLVM's "out of memory") or a hang
is seen by the parent as a dead or silent worker instead of killing the test run.

    python fuzz_worker.py          # one JSON request a line on stdin, one answer a line

Requests: ``{"kind": "mbl", "text": ...}``, ``{"kind": "uc", "text": ...}``,
``{"kind": "img", "words": [...], "ctx_mode": 8, "mes": [0]}``,
``{"kind": "native_frames" | "chip_frames", "seed": N, "count": K}``.  Answers:
``{"outcome": "ok" | "rejected" | "internal", "detail": ...}``: "rejected" is a user error
(an NpkitError: a diagnostic, a fault of the simulated program), "internal" anything else
(a bug: the message and the traceback's last lines).  ``Worker`` is the parent's side.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MICROBLOCKS = ROOT / "microblocks"
ROUTER = ROOT / "examples" / "router" / "router.mbl"
ROUTES = ROOT / "examples" / "router" / "routes.txt"
UC_CYCLES = 3_000        # cycles an assembled or bit-flipped program runs on the chip
PROBE_FRAMES = 8         # frames through each clean MBL program natively
MEMORY_LIMIT = 6 << 30   # address space of the worker


# --------------------------------------------------------------------------- worker side
def _mbl(request: dict[str, Any]) -> dict[str, Any]:
    import llvmlite.binding as llvm

    from npkit.compiler.mbl import check_source
    from npkit.compiler.mbl.lower import lower
    from npkit.compiler.mbl.native import NativeProgram
    from npkit.compiler.me import emit_text

    program, bag = check_source(request["text"], "fuzz.mbl", path=MICROBLOCKS / "fuzz.mbl")
    rendered = bag.render(program.sources)
    if len(rendered) > 200 * max(1, len(bag.items)) + 40 * len(request["text"]) + 10_000:
        return {"outcome": "internal", "detail": f"diagnostics of {len(rendered)} characters"}
    if bag.errors or not program.blocks:
        return {"outcome": "rejected", "detail": "diagnostics", "stage": "check"}
    llvm.parse_assembly(str(lower(program))).verify()
    native = NativeProgram(program)
    from fuzz_gen import malformed_frames  # noqa: PLC0415 -- the worker's own folder

    frames = malformed_frames(len(request["text"]), PROBE_FRAMES)
    verdicts = native.run(frames, 0)
    if len(verdicts) != len(frames):
        return {"outcome": "internal", "detail": "native: a frame without a verdict"}
    if request.get("backend", True):
        emit_text(program, "uc", None)
    return {"outcome": "ok", "stage": "uc" if request.get("backend", True) else "native"}


def _chip_run(image: Any) -> dict[str, Any]:
    from npkit.sim import Chip

    chip = Chip()
    chip.load(image)
    chip.run(cycles=UC_CYCLES)
    return {"outcome": "ok", "stage": "ran"}


def _uc(request: dict[str, Any]) -> dict[str, Any]:
    from npkit.compiler.uc import assemble_text, disassemble

    image = assemble_text(request["text"], "fuzz.uc")
    again = assemble_text(disassemble(image), "again.uc")
    if again.words != image.words:
        return {"outcome": "internal", "detail": "disassembly does not assemble to the image"}
    return _chip_run(image)


def _img(request: dict[str, Any]) -> dict[str, Any]:
    from npkit.compiler.uc import Image

    image = Image(mes=tuple(request["mes"]), ctx_mode=request["ctx_mode"],
                  words=list(request["words"]))
    image.validate()
    return _chip_run(image)


_ROUTER: dict[str, Any] = {}


def _router() -> tuple[Any, Any]:
    """The dual-stack router, its native program with examples/router/routes.txt, and (on
    first use by chip_frames) its linked manifest."""
    if "native" not in _ROUTER:
        from npkit.compiler.mbl import compile_file
        from npkit.compiler.mbl.native import NativeProgram
        from npkit.runtime.native_routes import load_route_files

        program = compile_file(ROUTER)
        native = NativeProgram(program)
        load_route_files(native, [ROUTES], 2024, 16, 2)
        native.table_add("local4", 0x0A000001, 1)
        _ROUTER.update(program=program, native=native)
    return _ROUTER["program"], _ROUTER["native"]


def _native_frames(request: dict[str, Any]) -> dict[str, Any]:
    from fuzz_gen import malformed_frames

    _, native = _router()
    frames = malformed_frames(request["seed"], request["count"])
    kinds: dict[str, int] = {}
    count = 0
    for v in native.run_stream((f, i % 2) for i, f in enumerate(frames)):
        kinds[v.kind] = kinds.get(v.kind, 0) + 1
        count += 1
        if v.kind == "none" or (v.kind == "forward" and not 0 <= v.port < 2):
            return {"outcome": "internal", "detail": f"native verdict {v}"}
    if count != len(frames):
        return {"outcome": "internal", "detail": f"{len(frames)} frames, {count} verdicts"}
    return {"outcome": "ok", "frames": count, "kinds": kinds}


def _chip_frames(request: dict[str, Any]) -> dict[str, Any]:
    from fuzz_gen import malformed_frames

    from npkit.compiler.me import compile_me
    from npkit.link import link
    from npkit.runtime.compiled import CompiledRun

    program, native = _router()
    if "linked" not in _ROUTER:
        _ROUTER["linked"] = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    run = CompiledRun(_ROUTER["linked"])
    run.load_memories(native)
    frames = malformed_frames(request["seed"], request["count"])
    by_port = {0: frames[0::2], 1: frames[1::2]}
    result = run.run(by_port, load=0.5)
    if result.accounted != result.offered:
        return {"outcome": "internal", "detail": f"{result.offered} frames offered, "
                f"{result.accounted} accounted for ({result.drops}, {result.receive_drops})"}
    if not result.leak_free:
        return {"outcome": "internal", "detail": f"buffers leaked: {result.leaks}"}
    return {"outcome": "ok", "frames": result.offered,
            "forwarded": sum(len(v) for v in result.out.values())}


def _sleep(request: dict[str, Any]) -> dict[str, Any]:
    time.sleep(request["seconds"])  # the harness's own test: a hang
    return {"outcome": "ok"}


def _abort(request: dict[str, Any]) -> dict[str, Any]:
    os.abort()  # the harness's own test: a process killed by SIGABRT


HANDLERS = {"mbl": _mbl, "uc": _uc, "img": _img, "native_frames": _native_frames,
            "chip_frames": _chip_frames, "sleep": _sleep, "abort": _abort}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    from npkit.base.errors import NpkitError

    try:
        return HANDLERS[request["kind"]](request)
    except NpkitError as err:
        message = str(err)
        if not message or "internal error" in message:
            return {"outcome": "internal", "detail": f"unhelpful NpkitError {message!r}"}
        return {"outcome": "rejected", "detail": message.splitlines()[0][:300]}
    except Exception as err:  # noqa: BLE001 -- the point: anything else is a bug
        tail = traceback.format_exc().strip().splitlines()[-6:]
        return {"outcome": "internal", "detail": f"{type(err).__name__}: {err}"[:500],
                "traceback": tail}


def main() -> None:
    import resource

    # a program that makes LLVM allocate without end is an abort here, not a machine
    # brought to its knees (the doubling-helpers program of issue 20 took 8 GB)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    sys.path.insert(0, str(HERE))
    sys.setrecursionlimit(10_000)
    for line in sys.stdin:
        reply = answer(json.loads(line))
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


# --------------------------------------------------------------------------- parent side
@dataclass
class Failure:
    kind: str        # internal | abort | hang
    request: dict[str, Any]
    detail: str

    def __str__(self) -> str:
        shown = {k: (v if not isinstance(v, str) or len(v) < 2000 else v[:2000] + "...")
                 for k, v in self.request.items() if k != "words"}
        return f"{self.kind}: {self.detail}\n  request: {json.dumps(shown)[:3000]}"


class Worker:
    """A worker process; ``ask`` restarts it after an abort or a hang and reports those as
    Failures, like internal errors."""

    def __init__(self, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            env = {**os.environ, "PYTHONPATH": str(HERE) + os.pathsep
                   + os.environ.get("PYTHONPATH", "")}
            self.proc = subprocess.Popen([sys.executable, str(HERE / "fuzz_worker.py")],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, env=env)
        return self.proc

    def ask(self, request: dict[str, Any],
            timeout_s: float | None = None) -> tuple[dict[str, Any] | None, Failure | None]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        ready: list[Any] = []
        while not ready and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        line = proc.stdout.readline() if ready else ""
        if line:
            reply = json.loads(line)
            if reply["outcome"] == "internal":
                detail = reply["detail"] + "".join(f"\n    {t}" for t in
                                                   reply.get("traceback", []))
                return reply, Failure("internal", request, detail)
            return reply, None
        if ready:  # end of file: the worker is dying, give it a moment to be reaped
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            self.proc = None
            return None, Failure("hang", request, f"no answer in {timeout_s or self.timeout_s} s")
        code = proc.returncode
        self.proc = None
        return None, Failure("abort", request, f"the worker died (exit status {code})")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


if __name__ == "__main__":
    main()
