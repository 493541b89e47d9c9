"""Bad input never crashes the assembler: it raises AsmError or assembles."""

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.uc import AsmError, assemble_text

PIECES = ["alu", "alu_shf", "immed", "immed32", "br", "beq", "sram", "dram", "ctx_arb",
          "ld_field", "mul_step", "cam_write", "hash_48", "local_csr_wr", "br=byte", "jump",
          "[", "]", ",", " ", "a1", "b2", "$x", "$$y", "$3", "*l$index0[", "*n$index++",
          "--", "<<", ">>rot", "#", "x#", "x#:", ":", ".reg", ".areg", ".sig", ".const",
          ".line", '"f"', ".me", ".ctx_mode", ".word", ".xfer_order", "#define", "#include",
          "#ifdef", "#endif", "defer[", "ctx_swap[", "sig_done[", "any", "voluntary", "0x",
          "12", "99", "-1", "~", "(", ")", "+", "B", "AND~", "x", "=", ";", "//", "\n", "\t",
          "0b11", "1 << 40", "load_cc", "32x32_last", "crc_32", "MAILBOX0", "\u00e9"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_garbage_gives_asm_error_or_image(pieces: list[str]) -> None:
    try:
        assemble_text("".join(pieces), "fuzz.uc")
    except AsmError as e:
        assert e.diagnostics
        text = str(e)
        assert "fuzz.uc:" in text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text(text: str) -> None:
    try:
        assemble_text(text, "fuzz.uc")
    except AsmError:
        pass
