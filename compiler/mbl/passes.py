"""The fixed LLVM optimization pipeline (no vectorization: the ME has no vector unit, and
both targets must see the same scalar code)."""

from __future__ import annotations

from functools import cache

import llvmlite.binding as llvm
from llvmlite import ir

PIPELINE = ("always-inline", "sroa", "instcombine", "sccp", "gvn", "simplifycfg",
            "jump-threading", "instcombine", "dce", "simplifycfg", "globaldce")


def new_target_machine() -> llvm.TargetMachine:
    """A fresh host target machine (MCJIT takes ownership of the one it is given)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine(opt=2, jit=True)


# LLVM's own full-unroll size limit at -O3 (`unroll-threshold-aggressive`, LoopUnrollPass.cpp).
HOST_UNROLL_THRESHOLD = 300


def set_unroll_threshold(threshold: int) -> None:
    """Set LLVM's `-unroll-threshold` before a pipeline that unrolls loops.  The option is
    process-wide and, once given, overrides every later pipeline's own limit, so each
    unrolling pipeline sets its own (the ME back end's unroll: 4000; the host's -O3:
    HOST_UNROLL_THRESHOLD); otherwise a native build after an ME compile in the same process
    would unroll with the ME's limit: other code, and up to 100 x the compile time."""
    llvm.set_option("", f"-unroll-threshold={threshold}")


@cache
def target_machine() -> llvm.TargetMachine:
    """The machine the optimization pipeline is tuned for (never handed to a JIT)."""
    return new_target_machine()


def _add(mpm, name: str) -> None:
    {"always-inline": mpm.add_always_inliner_pass, "sroa": mpm.add_sroa_pass,
     "instcombine": mpm.add_instruction_combine_pass, "sccp": mpm.add_sccp_pass,
     "gvn": mpm.add_new_gvn_pass, "simplifycfg": mpm.add_simplify_cfg_pass,
     "jump-threading": mpm.add_jump_threading_pass,
     "dce": mpm.add_aggressive_dce_pass, "globaldce": mpm.add_global_dead_code_eliminate_pass,
     }[name]()


def optimize(module: ir.Module | str) -> llvm.ModuleRef:
    """Parse, verify and run the fixed pipeline twice (inlining exposes more work)."""
    ref = llvm.parse_assembly(str(module))
    ref.verify()
    tm = target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    pb = llvm.create_pass_builder(tm, pto)
    mpm = llvm.create_new_module_pass_manager()
    for _ in range(2):
        for name in PIPELINE:
            _add(mpm, name)
    mpm.run(ref, pb)
    ref.verify()
    return ref
