"""Where a variable is, per instruction of hand-made machine IR (compiler/me/back/varlocs.py),
against the rules written out case by case: a value is readable in its register from its
binding until the register is written by another value or by the same virtual register
again; bindings that differ between paths are unknown after the join; a fixed transfer
register holds until a command names it, and holds nothing while a read is filling it;
copies coalesced into one register hold both."""

from __future__ import annotations

from npkit.base.diagnostics import SourceLocation
from npkit.compiler.me.back.emit import emit
from npkit.compiler.me.back.mir import MBind, MBlock, MFunction, MInstr, VReg
from npkit.compiler.me.back.varlocs import coalesced, locate
from npkit.compiler.uc.assembler import assemble_text
from npkit.compiler.uc.image import Variable

X = Variable("x", "blk", SourceLocation("t.mbl", 1), 32, scope_end=9)


def op(dst, value: int = 1, **kw) -> MInstr:
    return MInstr("alu[{0}, --, B, " + str(value) + "]", [dst], defs=(0,), **kw)


def nop(**kw) -> MInstr:
    return MInstr("nop", [], **kw)


def where(fn: MFunction, names: dict, same: dict | None = None) -> list:
    views = locate(fn, names, same or {})
    return [None if (loc := views[id(i)].get(X)) is None else loc.parts
            for b in fn.blocks for i in b.instrs]


def test_a_value_lives_until_its_register_is_reused() -> None:
    v1, v2 = VReg(1), VReg(2)
    fn = MFunction("f", [MBlock("e#", [op(v1), nop(dbg=(MBind(X, ((v1,),)),)), op(v2), nop()])],
                   8)
    assert where(fn, {v1: "a0", v2: "a0"}) == [None, ("a0",), ("a0",), None]
    assert where(fn, {v1: "a0", v2: "b0"}) == [None, ("a0",), ("a0",), ("a0",)]


def test_bound_before_computed_and_written_twice() -> None:
    v1 = VReg(1)
    fn = MFunction("f", [MBlock("e#", [nop(dbg=(MBind(X, ((v1,),)),)), op(v1, 1), nop(),
                                       op(v1, 2), nop()])], 8)
    # pending until the first write, that value is x's; the second write is another value
    assert where(fn, {v1: "a0"}) == [None, None, ("a0",), ("a0",), None]


def test_paths_that_disagree_leave_it_unknown() -> None:
    v1, v2 = VReg(1), VReg(2)
    same = MBind(X, ((v1,),))
    branch = MInstr("br[l#]", [], kind="branch", targets=("l#",))

    def fn(second: MBind) -> MFunction:
        return MFunction("f", [
            MBlock("e#", [op(v1), op(v2), nop(dbg=(same,)), branch], ("l#", "r#")),
            MBlock("r#", [nop(dbg=(second,))], ("j#",)),
            MBlock("l#", [nop()], ("j#",)),
            MBlock("j#", [nop()])], 8)
    names = {v1: "a0", v2: "b0"}
    assert where(fn(same), names)[-1] == ("a0",)
    assert where(fn(MBind(X, ((v2,),))), names)[-1] is None
    assert where(fn(MBind(X, None)), names)[-1] is None


def test_a_transfer_register_holds_until_a_command_names_it() -> None:
    fn = MFunction("f", [MBlock("e#", [
        nop(dbg=(MBind(X, (("$2",),)),)), nop(),
        MInstr("sram[read, $2, a1, 0, 1], ctx_swap[1]", [], kind="mem"), nop()])], 8)
    assert where(fn, {}) == [("$2",), ("$2",), ("$2",), None]


def test_a_transfer_register_a_read_is_filling_holds_nothing_until_its_wait() -> None:
    # the scheduler put x's binding (the read's result) between the read and its ctx_arb
    read = MInstr("sram[read, $0, a1, 0, 1], sig_done[1]", [], kind="mem", signals=(1,))
    other = MInstr("ctx_arb[2]", [], kind="wait", signals=(2,))
    wait = MInstr("ctx_arb[1]", [], kind="wait", signals=(1,))
    fn = MFunction("f", [MBlock("e#", [read, nop(dbg=(MBind(X, (("$0",),)),)), other, wait,
                                       nop()])], 8)
    assert where(fn, {}) == [None, None, None, None, ("$0",)]


def test_coalesced_copies_share_the_register() -> None:
    s, d = VReg(1), VReg(2)
    copy = MInstr("alu[{0}, --, B, {1}]", [d, s], defs=(0,), uses=(1,), copy=True)
    body = [op(s), copy, nop(dbg=(MBind(X, ((d,),)),)), nop()]
    names = {s: "a0", d: "a0"}
    same = coalesced(MFunction("f", [MBlock("e#", body)], 8), names)
    fn = MFunction("f", [MBlock("e#", [op(s), nop(dbg=(MBind(X, ((d,),)),)), nop()])], 8)
    assert where(fn, names, same) == [None, ("a0",), ("a0",)]   # the copy was dropped
    assert where(fn, names) == [None, None, None]               # without: not d's write


def test_emitted_directives_assemble_to_the_same_locations() -> None:
    v1, v2 = VReg(1), VReg(2)
    fn = MFunction("f", [MBlock("body_entry#", [
        op(v1, loc=X.decl), nop(dbg=(MBind(X, ((v1,), (7,)), ("DW_OP_LLVM_arg", 0,
                                                             "DW_OP_LLVM_arg", 1, "DW_OP_plus",
                                                             "DW_OP_stack_value")),),
                                loc=X.decl),
        op(v2, loc=X.decl), nop(loc=X.decl)])], 8)
    names = {v1: "a0", v2: "a0"}
    text, count = emit(fn, names, locate(fn, names, {}))
    image = assemble_text(text + "ctx_arb[kill]\n")
    assert count == 4
    got = [None if (v := image.variables_at(pc)[0]).location is None else v.value(
        {"a0": 5}.__getitem__) for pc in range(4)]
    assert got == [None, 12, 12, None]


def test_spills_while_local_memory_pointer_is_moved() -> None:
    v1 = VReg(1)
    around = MInstr("local_csr_wr[ACTIVE_LM_ADDR_0, {0}]\nnop\nalu[--, --, B, *l$index0[0]]\n"
                    "local_csr_wr[ACTIVE_LM_ADDR_0, {0}]", ["b9"])
    moved = MInstr("local_csr_wr[ACTIVE_LM_ADDR_0, {0}]", ["b9"])
    names = {v1: "*l$index0[3]"}

    def fn(*middle: MInstr) -> MFunction:
        return MFunction("f", [MBlock("e#", [op(v1), nop(dbg=(MBind(X, ((v1,),)),)),
                                             *middle, nop()])], 8)
    # moved and put back inside one macro: not readable in it, readable after it
    assert where(fn(around), names) == [None, ("*l$index0[3]",), None, ("*l$index0[3]",)]
    # moved for good: not readable from there on
    assert where(fn(moved), names) == [None, ("*l$index0[3]",), None, None]


def test_a_macro_that_writes_a_register_hides_it_for_all_its_words() -> None:
    v1, v2 = VReg(1), VReg(2)
    macro = MInstr("alu[{0}, --, B, 1]\nalu[{0}, {0}, +, 1]", [v2], defs=(0,))
    fn = MFunction("f", [MBlock("e#", [op(v1), nop(dbg=(MBind(X, ((v1,),)),)), macro,
                                       nop()])], 8)
    assert where(fn, {v1: "a0", v2: "a0"}) == [None, ("a0",), None, None]
    assert where(fn, {v1: "a0", v2: "b0"}) == [None, ("a0",), ("a0",), ("a0",)]
