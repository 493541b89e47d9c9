"""``npkit debug``: a REPL over the debugger (npkit.runtime.debugger; docs/debugging.md).

    npkit debug X.mbl|MANIFEST.toml [--in PORT=FILE ...] [-x SCRIPT] [table options]

Every command is one call of the ``Debugger`` API, so a session can be replayed from
Python; ``-x SCRIPT`` runs commands from a file first (each echoed after the prompt, as
typed), then reads more from the terminal (or stdin).
"""

from __future__ import annotations

import cmd
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import click

from npkit.base.errors import NpkitError
from npkit.base.portspec import parse_port_files

from .app import SEED
from .mbl import PLATFORM_OPTION, checked_program, native_tables, platform_ports, table_options

HELP = """commands (ME/ctx: the current context, set by each stop or by `ctx ME CTX`):
  break FILE:LINE | LABEL | pc N [ME] | drop REASON|any | packet N    set a breakpoint
        ... if NAME OP VALUE [and ...]          stop only where it holds (NAME: an MBL
                                                variable, a register, packet.FIELD)
  condition ID [NAME OP VALUE [and ...]]                             set / remove a condition
  watch sram|dram|scratch|local ADDR [BYTES] [UNIT]                  stop when memory changes
  info | delete ID                                                   list / remove breakpoints
  continue [CYCLES] | stepi [N] | step | steppacket                  run (step: one MBL line)
  ctx ME CTX | where | list [N] | regs | print NAME... | signals | vars  the context
  packet [FIELD...] | mem KIND ADDR [COUNT] [UNIT] | ring N | drops  data
  output
  checkpoint | reverse | coverage FILE.info | quit"""


class DebugShell(cmd.Cmd):
    """The REPL: parses a line, calls the Debugger, prints the answer."""

    prompt = "(npkit) "
    intro = ""

    def __init__(self, dbg: Any, out: TextIO) -> None:
        super().__init__(stdout=out)
        self.dbg = dbg
        self.me: int | None = None
        self.ctx: int | None = None
        self.echo = False
        self.here = str(Path.cwd()) + "/"

    # ---- plumbing
    def say(self, text: str) -> None:
        # source paths under the current folder are shown relative to it
        self.stdout.write(text.replace(self.here, "") + "\n")

    def onecmd(self, line: str) -> bool:
        if self.echo and line.strip():
            self.say(self.prompt + line.strip())
        try:
            return bool(super().onecmd(line))
        except (NpkitError, ValueError, IndexError) as err:
            self.say(f"error: {err}")
        return False

    def emptyline(self) -> bool:
        return False

    def default(self, line: str) -> bool:
        if line.strip() == "EOF":
            return True
        self.say(f"error: unknown command {line.split()[0]!r}; `help` lists the commands")
        return False

    def do_help(self, arg: str) -> None:
        self.say(HELP)

    def do_quit(self, arg: str) -> bool:
        return True

    def do_EOF(self, arg: str) -> bool:  # noqa: N802 (cmd's name for end of input)
        return True

    def _current(self) -> tuple[int, int]:
        if self.me is None or self.ctx is None:
            raise NpkitError("no current context: run to a stop, or choose one with ctx ME CTX")
        return self.me, self.ctx

    def _report(self, stop: Any) -> None:
        if stop.me is not None and stop.me >= 0:
            self.me, self.ctx = stop.me, stop.ctx
        self.say(stop.describe())

    @staticmethod
    def _ints(arg: str, names: str, least: int) -> list[int]:
        words = shlex.split(arg)
        if len(words) < least:
            raise NpkitError(f"expected {names}")
        try:
            return [int(w, 0) for w in words]
        except ValueError:
            raise NpkitError(f"expected {names}, got {arg!r}") from None

    # ---- breakpoints
    def do_break(self, arg: str) -> None:
        arg, sep, condition = arg.partition(" if ")
        words = shlex.split(arg)
        if not words:
            raise NpkitError("break what? FILE:LINE, LABEL, pc N [ME], drop REASON, packet N")
        dbg = self.dbg
        if words[0] == "pc":
            nums = self._ints(" ".join(words[1:]), "pc N [ME]", 1)
            bp = dbg.break_pc(nums[0], nums[1] if len(nums) > 1 else None)
        elif words[0] == "drop":
            reason = words[1] if len(words) > 1 else "any"
            bp = dbg.break_drop(None if reason == "any" else reason)
        elif words[0] == "packet":
            bp = dbg.break_packet(self._ints(" ".join(words[1:]), "packet N", 1)[0])
        elif ":" in words[0]:
            bp = dbg.break_line(words[0])
        else:
            bp = dbg.break_label(words[0])
        if sep:
            try:
                bp = dbg.set_condition(bp.id, condition)
            except NpkitError:
                dbg.delete(bp.id)
                raise
        self.say(f"breakpoint {bp.id}: {self._describe(bp)}")

    def do_condition(self, arg: str) -> None:
        number, _, condition = arg.strip().partition(" ")
        bp_id = self._ints(number, "condition ID [NAME OP VALUE [and ...]]", 1)[0]
        bp = self.dbg.set_condition(bp_id, condition.strip() or None)
        self.say(f"breakpoint {bp.id}: {self._describe(bp)}")

    def _describe(self, bp: Any) -> str:
        condition = f" if {bp.condition.text}" if bp.condition is not None else ""
        return f"{bp.kind} {bp.spec}{condition}{self._where(bp)}"

    @staticmethod
    def _where(bp: Any) -> str:
        if not bp.pcs:
            return ""
        pcs = sorted({pc for pcs in bp.pcs.values() for pc in pcs})
        mes = sorted(bp.pcs)
        return f" (pc {', '.join(map(str, pcs))} on ME {', '.join(map(str, mes))})"

    def do_watch(self, arg: str) -> None:
        words = shlex.split(arg)
        if len(words) < 2:
            raise NpkitError("expected watch sram|dram|scratch|local ADDR [BYTES] [UNIT]")
        nums = self._ints(" ".join(words[1:]), "ADDR [BYTES] [UNIT]", 1)
        bp = self.dbg.watch(words[0], nums[0], *(nums[1:3]))
        self.say(f"breakpoint {bp.id}: watch {bp.spec}")

    def do_info(self, arg: str) -> None:
        if not self.dbg.breakpoints:
            self.say("no breakpoints")
        for bp in self.dbg.breakpoints.values():
            self.say(f"{bp.id}: {self._describe(bp)}")

    def do_delete(self, arg: str) -> None:
        self.dbg.delete(self._ints(arg, "a breakpoint number", 1)[0])

    # ---- running
    def do_continue(self, arg: str) -> None:
        nums = self._ints(arg, "[CYCLES]", 0)
        self._report(self.dbg.cont(*nums[:1]))

    do_c = do_continue

    def do_stepi(self, arg: str) -> None:
        me, ctx = self._current()
        nums = self._ints(arg, "[N]", 0)
        self._report(self.dbg.stepi(me, ctx, nums[0] if nums else 1))
        self.say(self.dbg.where(me, ctx))

    do_si = do_stepi

    def do_step(self, arg: str) -> None:
        me, ctx = self._current()
        self._report(self.dbg.step_line(me, ctx))
        self.say(self.dbg.where(me, ctx))

    do_s = do_step

    def do_steppacket(self, arg: str) -> None:
        stop = self.dbg.next_packet()
        self._report(stop)
        frames = self.dbg.output()
        if stop.reason == "frames" and frames:
            last = frames[-1]
            self.say(f"frame out of port {last.port} at cycle {last.last_bit_cycle:,}: "
                     f"{len(last.data)} bytes")

    # ---- the current context
    def do_ctx(self, arg: str) -> None:
        me, ctx = self._ints(arg, "ME CTX", 2)[:2]
        self.dbg.context(me, ctx)   # checks them
        self.me, self.ctx = me, ctx
        self.say(self.dbg.where(me, ctx))

    def do_where(self, arg: str) -> None:
        self.say(self.dbg.where(*self._current()))

    def do_list(self, arg: str) -> None:
        me, ctx = self._current()
        count = (self._ints(arg, "[COUNT]", 0) or [6])[0]
        pc = self.dbg.context(me, ctx)["pc"]
        for at, text, source in self.dbg.disassemble(me, pc - 1, count):
            mark = "=>" if at == pc else "  "
            self.say(f"{mark} {at:5d}  {text:<44} {source}")

    def do_regs(self, arg: str) -> None:
        me, ctx = self._current()
        regs = self.dbg.registers(me, ctx)
        names = {v: k for k, v in self.dbg.info(me).registers.items()}
        for prefix in ("a", "b", "$", "$$"):   # $x, $$x: the *in* transfer registers
            row = [f"{prefix}{i}={regs[f'{prefix}{i}']:#x}" for i in range(16)]
            self.say("  ".join(row[:8]))
            self.say("  ".join(row[8:]))
        named = [f"{n}={self.dbg.reg(me, ctx, n):#x}" for r, n in sorted(names.items())
                 if not r.startswith("$")]
        if named:
            self.say("named: " + "  ".join(named))

    def do_print(self, arg: str) -> None:
        me, ctx = self._current()
        for name in shlex.split(arg) or []:
            self.say(f"{name} = {self.dbg.reg(me, ctx, name):#x}")

    do_p = do_print

    def do_signals(self, arg: str) -> None:
        sig = self.dbg.signals(*self._current())
        self.say(f"pending: {', '.join(sig['pending']) or '-'}; "
                 f"waiting for: {', '.join(sig['waiting']) or '-'}")

    def do_vars(self, arg: str) -> None:
        values = self.dbg.variable_values(*self._current())
        if not values:
            self.say("no MBL variables here")
        for var, value in values:
            shown = "<optimized out>" if value is None else f"{value} ({value:#x})"
            self.say(f"{var.variable.name} = {shown}")

    # ---- data
    def do_packet(self, arg: str) -> None:
        fields = shlex.split(arg)
        if not fields:
            self.say(self.dbg.dissect(*self._current()).rstrip())
            return
        values = self.dbg.packet_fields(*self._current(), fields)
        self.say(", ".join(f"{name} = {value}" for name, value in values.items()))

    def do_mem(self, arg: str) -> None:
        words = shlex.split(arg)
        if len(words) < 2:
            raise NpkitError("expected mem sram|dram|scratch|local ADDR [COUNT] [UNIT]")
        nums = self._ints(" ".join(words[1:]), "ADDR [COUNT] [UNIT]", 1)
        values = self.dbg.memory(words[0], nums[0], *(nums[1:3]))
        width = 2 if words[0] == "dram" else 8
        self.say(" ".join(f"{v:0{width}x}" for v in values))

    def do_ring(self, arg: str) -> None:
        state, words = self.dbg.ring(self._ints(arg, "a ring number", 1)[0])
        self.say(f"{state['count']} words of {state['size']} (high water "
                 f"{state['high_water']}): {' '.join(f'{w:#x}' for w in words[:32])}"
                 + (" ..." if len(words) > 32 else ""))

    def do_drops(self, arg: str) -> None:
        counts = self.dbg.drop_counts()
        self.say(", ".join(f"{k} {v}" for k, v in counts.items()) or "no drops")

    def do_output(self, arg: str) -> None:
        frames = self.dbg.output()
        self.say(f"{len(frames)} frames out")
        for f in frames[-10:]:
            self.say(f"  port {f.port} cycle {f.last_bit_cycle:,}: {len(f.data)} bytes")

    # ---- checkpoints, coverage
    def do_checkpoint(self, arg: str) -> None:
        n = self.dbg.checkpoint()
        self.say(f"checkpoint {n} at cycle {self.dbg.chip.now:,}")

    def do_reverse(self, arg: str) -> None:
        n = self.dbg.reverse()
        self.say(f"back at checkpoint {n}, cycle {self.dbg.chip.now:,}")

    def do_coverage(self, arg: str) -> None:
        words = shlex.split(arg)
        if not words:
            raise NpkitError("expected coverage FILE.info")
        cov = self.dbg.coverage()
        cov.write_lcov(words[0])
        for file, (hit, total) in cov.summary().items():
            if file.endswith(".mbl"):
                self.say(f"{Path(file).name}: {hit}/{total} lines")
        self.say(f"lcov: {words[0]}")


def build_debugger(target: Path, inputs: dict[int, Path], entry: str | None,
                   platform: str | None, table_args: tuple[Any, ...], chip: str | None,
                   seed: int | None, coverage: bool) -> Any:
    """A Debugger over the target loaded on a fresh chip, the input frames offered."""
    from npkit.link.manifest import parse_manifest
    from npkit.runtime.debugger import Debugger
    from npkit.runtime.loader import build_from_manifest
    from npkit.sim import PcapSource

    if target.suffix == ".mbl":
        from npkit.link import DEFAULT_PLATFORM, chip_manifest

        program = checked_program(target)
        tables, routes, route_seed, next_hops, ports = table_args
        filled = native_tables(program, entry, tables, routes, route_seed, next_hops,
                               ports or platform_ports(platform))
        manifest = chip_manifest(program, platform or DEFAULT_PLATFORM, entry=entry,
                                 tables=filled)
    elif target.suffix == ".toml":
        manifest = parse_manifest(target)
    else:
        raise NpkitError(f"{target}: npkit debug takes an MBL program (.mbl) or a manifest "
                         "(.toml)")
    loaded = build_from_manifest(manifest, chip=chip, seed=seed)
    if coverage:
        loaded.chip.enable_coverage()
    dbg = Debugger(loaded.chip, manifest.program)
    for port, path in inputs.items():
        if port >= len(loaded.chip.config.ports):
            raise NpkitError(f"port {port} does not exist: the chip has ports "
                             f"0..{len(loaded.chip.config.ports) - 1}")
        dbg.offer(port, [f.data for f in PcapSource(path).frames()])
    return dbg


@click.command()
@click.argument("target", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--in", "inputs", multiple=True, metavar="PORT=FILE.pcap",
              help="frames offered to a port up front, back to back at line rate")
@click.option("--entry", help="MBL: the pipeline or block to run")
@PLATFORM_OPTION
@table_options
@click.option("--chip", help="chip preset or chip .toml (manifests)")
@click.option("--seed", type=SEED, help="simulation seed")
@click.option("-x", "--commands", "script", type=click.Path(exists=True, dir_okay=False,
                                                             path_type=Path),
              help="run these commands first (one a line), echoing each")
@click.option("--coverage", is_flag=True, help="count executed lines from the start (for the "
              "`coverage FILE` command)")
def debug(target: Path, inputs: tuple[str, ...], entry: str | None, platform: str | None,
          tables: tuple[str, ...], route_files: tuple[str, ...], route_seed: int,
          next_hop_count: int, port_count: int | None, chip: str | None, seed: int | None,
          script: Path | None, coverage: bool) -> None:
    """Debug a program on the simulated chip: breakpoints on MBL lines, labels, memory,
    drop reasons and packets; stepping; registers, variables, packets; checkpoints."""
    in_files = parse_port_files(inputs, "--in", must_exist=True)
    dbg = build_debugger(target, in_files, entry, platform,
                         (tables, route_files, route_seed, next_hop_count, port_count),
                         chip, seed, coverage)
    shell = DebugShell(dbg, sys.stdout)
    run_shell(shell, script, sys.stdin)


def run_shell(shell: DebugShell, script: Path | None, stdin: TextIO,
              interactive: Callable[[], bool] = lambda: sys.stdin.isatty()) -> None:
    """The script's commands (echoed), then the terminal's (or stdin's, echoed)."""
    if script is not None:
        shell.echo = True
        for line in script.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("#"):
                continue
            if shell.onecmd(line):
                return
    shell.echo = False
    if interactive():
        shell.cmdloop()
        return
    shell.echo = True
    for line in stdin:
        if shell.onecmd(line.rstrip("\n")):
            return
