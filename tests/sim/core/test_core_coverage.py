"""Fails when an instruction, command or enum value of the ISA table has no semantics test.

Each semantics test module declares COVERED, derived from the tables it iterates over; this
test computes what the table requires and names whatever nobody tests.
"""

from __future__ import annotations

import test_core_alu
import test_core_branch
import test_core_media
import test_core_memory
import test_core_units

from npkit.sim import isa

MODULES = (test_core_alu, test_core_branch, test_core_memory, test_core_units, test_core_media)
# enum tables whose values are not mnemonics of their own
VALUE_TABLES = ("ALU_OPS", "SHIFT_TYPES", "MUL_STEPS", "CTX_ARB_MODES", "CRC_KINDS",
                "HASH_SIZES", "INP_STATES", "LOCAL_CSRS")


def required() -> set[str]:
    need = {m for ins in isa.INSTRUCTIONS for m in ins.mnemonics}
    need |= {f"{ins.name}.{cmd}" for ins in isa.INSTRUCTIONS for cmd in ins.cmds}
    need |= {f"{table}:{key}" for table in VALUE_TABLES for key in isa.ENUMS[table]}
    return need


def test_every_instruction_command_and_enum_value_has_a_semantics_test():
    covered = set().union(*(m.COVERED for m in MODULES))
    missing = sorted(required() - covered)
    assert not missing, f"no semantics test for: {', '.join(missing)}"


def test_coverage_names_are_real():
    covered = set().union(*(m.COVERED for m in MODULES))
    assert not covered - required(), "COVERED names something the ISA table does not have"
