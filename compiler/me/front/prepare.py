"""Pass 1: lower the program, make the entry one function (a pipeline's blocks inlined),
run the fixed optimization pipeline, then fully unroll the bounded loops (the ME has no
use for a loop whose trip count is a compile-time constant: unrolled, its shifts and
indexes become constants)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from npkit.base.diagnostics import SourceLocation
from npkit.compiler.mbl import ast as A
from npkit.compiler.mbl.debuginfo import DebugLocations, VarValue, scope_ends
from npkit.compiler.mbl.lower import lower
from npkit.compiler.mbl.passes import optimize, set_unroll_threshold, target_machine
from npkit.compiler.mbl.sema import Program

from .. import wir
from .errors import FrontError, unsupported
from .intrinsics import RX_TURN_DONE

# LLVM's full-unroll size limit for the ME (its default, 150 at -O2, leaves the 14-step IPv6
# trie walk rolled); passes.set_unroll_threshold.
UNROLL_THRESHOLD = 4000
POST_UNROLL = ("instcombine", "sccp", "gvn", "simplifycfg", "jump-threading", "instcombine",
               "dce", "simplifycfg")


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str                       # "pipeline" | "block"
    loc: wir.Loc | None

    @property
    def symbol(self) -> str:
        return f"mbl.{self.kind}.{self.name}"


def choose_entry(program: Program, entry: str | None) -> Entry:
    """The named pipeline or block; by default the root file's only pipeline, else its only
    block."""
    if entry is not None:
        if entry in program.pipelines:
            return _entry(program.pipelines[entry], "pipeline")
        if entry in program.blocks:
            return _entry(program.blocks[entry], "block")
        raise FrontError(f"no pipeline or block named '{entry}'; choose from "
                         + _choices(program))
    root = program.modules[-1].decls if program.modules else []
    pipelines = [d for d in root if isinstance(d, A.Pipeline)]
    blocks = [d for d in root if isinstance(d, A.Microblock)]
    if len(pipelines) == 1:
        return _entry(pipelines[0], "pipeline")
    if not pipelines and len(blocks) == 1:
        return _entry(blocks[0], "block")
    raise FrontError("name the pipeline or block to compile; choose from " + _choices(program))


def _entry(decl: A.Decl, kind: str) -> Entry:
    s = decl.span
    return Entry(decl.name, kind, wir.Loc(s.file, s.line, s.column))


def _choices(program: Program) -> str:
    names = [f"pipeline {p}" for p in program.pipelines] + \
        [f"block {b}" for b in program.blocks]
    return ", ".join(names) or "(none: the program has no block)"


def _pass(mpm, name: str) -> None:
    {"instcombine": mpm.add_instruction_combine_pass, "sccp": mpm.add_sccp_pass,
     "gvn": mpm.add_new_gvn_pass, "simplifycfg": mpm.add_simplify_cfg_pass,
     "jump-threading": mpm.add_jump_threading_pass, "dce": mpm.add_aggressive_dce_pass,
     "loop-simplify": mpm.add_loop_simplify_pass, "lcssa": mpm.add_lcssa_pass,
     "loop-rotate": mpm.add_loop_rotate_pass, "loop-unroll": mpm.add_loop_unroll_pass,
     "instnamer": mpm.add_instruction_namer_pass}[name]()


def unroll(ref: llvm.ModuleRef) -> None:
    """Fully unroll constant-trip loops, clean up, and name every value and block."""
    set_unroll_threshold(UNROLL_THRESHOLD)
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(target_machine(), pto)
    mpm = llvm.create_new_module_pass_manager()
    for name in ("loop-simplify", "lcssa", "loop-rotate", "loop-unroll", *POST_UNROLL,
                 "instnamer"):
        _pass(mpm, name)
    mpm.run(ref, pb)
    ref.verify()


@dataclass
class Prepared:
    module: llvm.ModuleRef
    function: llvm.ValueRef
    entry: Entry
    locate: Callable[[llvm.ValueRef], wir.Loc | None]
    values: Callable[[llvm.ValueRef], list[VarValue]] = lambda _: []   # variable records


def prepare(program: Program, entry: str | None = None, receive: bool = False) -> Prepared:
    """`receive`: the entry may have a receive stage (the body is for link/dispatch/pool.uc,
    which runs it once per mpacket with its status in metadata word 11, the stage inside
    the port's receive turn: the turn passes at the `npu.rx.turn_done` marker put after
    the stage)."""
    chosen = choose_entry(program, entry)
    rx_where = _reject_receive_stages(program, chosen, allow=receive)
    module = lower(program, variables=True)   # dbg.declare: MBL variables (debuginfo.py)
    if rx_where is not None and chosen.kind == "pipeline":
        _mark_receive_stage_end(module, program, chosen.name)
    if chosen.kind == "pipeline":
        for stage in program.pipelines[chosen.name].stages:
            module.get_global(f"mbl.block.{stage.block}").attributes.add("alwaysinline")
    ref = optimize(module)
    unroll(ref)
    locations = DebugLocations(ref)
    ends = scope_ends(d for m in program.modules for d in m.decls)

    def values(instr: llvm.ValueRef) -> list[VarValue]:
        """The records before instr, each variable with its declaration's column and the
        end of its lexical scope (from the AST)."""
        out = []
        for v in locations.values_of(instr):
            decl = v.variable.decl
            column, end = ends.get((decl.file, decl.line, v.variable.name),
                                   (decl.column, decl.line))
            out.append(dataclasses.replace(v, variable=dataclasses.replace(
                v.variable, decl=SourceLocation(decl.file, decl.line, column),
                scope_end=end)))
        return out

    return Prepared(ref, ref.get_function(chosen.symbol), chosen, locations.loc_of, values)


def _reject_receive_stages(program: Program, chosen, allow: bool = False):
    """A receive stage runs once per mpacket with its status (docs/datapath.md): only
    link/dispatch/pool.uc gives it that (`allow`); the forwarding dispatch would run it on
    whole frames with no status (SOP and EOP both clear), unlike the native target.  The
    location of the first receive operation (None: no receive stage)."""
    blocks = [st.block for st in program.pipelines[chosen.name].stages] \
        if chosen.kind == "pipeline" else [chosen.name]
    for block in blocks:
        where = program.media_use.get(block, {}).get("rx")
        if where is not None and allow:
            return where
        if where is not None:
            raise unsupported(f"block {block} is a receive stage (media.sop/eop/consume, "
                              "buffer.store/attach): the ME backend does not compile "
                              "receive stages yet", where, program.sources,
                              "docs/datapath.md: the pool mapping (compile_me(..., "
                              "LM_WINDOW_ABI), link(..., pool_mes_per_port=N)) runs "
                              "receive stages; the native target runs it")
    return None


def _mark_receive_stage_end(module: ir.Module, program: Program, pipeline: str) -> None:
    """A call of RX_TURN_DONE right after the call of the pipeline's first (receive) stage:
    the stage's reads and writes of per-port state happen in mpacket order on the chip
    (pool.uc holds the port's receive turn until then), the later stages run outside it.
    An opaque call: LLVM moves no memory access across it."""
    first = program.pipelines[pipeline].stages[0]
    fn = module.get_global(f"mbl.pipeline.{pipeline}")
    callee = f"mbl.block.{first.block}"
    for block in fn.blocks:
        for instr in block.instructions:
            if isinstance(instr, ir.CallInstr) and instr.callee.name == callee:
                try:        # declared already when the stage ends its turn itself
                    marker = module.get_global(RX_TURN_DONE)
                except KeyError:
                    marker = ir.Function(module, ir.FunctionType(
                        ir.VoidType(), [fn.args[0].type]), RX_TURN_DONE)
                    marker.attributes.add("nounwind")
                b = ir.IRBuilder(block)
                b.position_after(instr)
                b.call(marker, [fn.args[0]])
                return
    raise AssertionError(f"{pipeline}: no call of its first stage {first.block}")


