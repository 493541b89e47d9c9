"""Round trips: source -> image -> disassembly -> identical image, through the file too."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npkit.compiler.uc import Image, SourceLocation, assemble_text, disassemble, listing
from npkit.sim import isa

CTX_LIMITED = {"gpr_a", "gpr_b", "xfer_s", "xfer_d", "nn"}  # docs/isa.md: 16 or 32 per ctx


def valid_codes(ctx_mode: int) -> list[int]:
    per_ctx = 16 if ctx_mode == 8 else 32
    codes = []
    for cls in isa.OPERAND_CLASSES:
        count = min(cls.count, per_ctx) if cls.name in CTX_LIMITED else cls.count
        codes.extend(range(cls.first, cls.first + count))
    return codes


CODES = {mode: valid_codes(mode) for mode in (4, 8)}


@st.composite
def legal_word(draw: st.DrawFn, ctx_mode: int) -> int:
    ins = draw(st.sampled_from(isa.INSTRUCTIONS))
    per_ctx = 16 if ctx_mode == 8 else 32
    fields = {}
    for f in isa.FORMATS[ins.format].fields:
        if f.kind == "opnd":
            fields[f.name] = draw(st.sampled_from(CODES[ctx_mode]))
        elif f.kind == "xfer":
            fields[f.name] = draw(st.one_of(st.integers(0, per_ctx - 1),
                                            st.just(isa.XFER_NONE)))
        elif f.kind.startswith("enum:") or f.kind == "csr":
            table = isa.LOCAL_CSRS if f.kind == "csr" else \
                ins.cmds if f.kind == "enum:CMD" else isa.ENUMS[f.kind[5:]]
            fields[f.name] = draw(st.sampled_from(sorted(table.values())))
        elif f.kind == "sigmask":  # bit 0 would name signal 0
            fields[f.name] = draw(st.integers(0, (1 << f.width) - 1)) & ~1
        else:
            fields[f.name] = draw(st.integers(0, (1 << f.width) - 1))
    return isa.encode(ins.opcode, fields)


def drop_bad_defers(words: list[int]) -> list[int]:
    """Clear defer counts whose shadow is missing or holds a branch (assembler rule)."""
    out = list(words)
    for pc, word in enumerate(out):
        ins, fields = isa.decode(word)
        n = fields.get("defer", 0)
        shadow = out[pc + 1:pc + 1 + n]
        if n and (len(shadow) < n or any(isa.decode(w)[0].timing in ("branch", "ctx")
                                         for w in shadow)):
            fields["defer"] = 0
            out[pc] = isa.encode(ins.opcode, fields)
    return out


@st.composite
def images(draw: st.DrawFn) -> Image:
    ctx_mode = draw(st.sampled_from((4, 8)))
    per_ctx = 16 if ctx_mode == 8 else 32
    words = drop_bad_defers(draw(st.lists(legal_word(ctx_mode), max_size=24)))
    files = ["main.uc", "inc/with space.uc", 'odd"quote\\.uc']
    lines = [SourceLocation(draw(st.sampled_from(files)), draw(st.integers(1, 10_000)),
                       draw(st.integers(1, 200))) for _ in words]
    n_labels = draw(st.integers(0, 6))
    symbols = {f"L{i}": draw(st.integers(0, len(words))) for i in range(n_labels)}
    registers = {}
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(("a", "b", "$", "$$")))
        prefix = kind if kind.startswith("$") else ""
        registers[f"{prefix}r{i}"] = f"{kind}{draw(st.integers(0, per_ctx - 1))}"
    signals = {f"s{i}": draw(st.integers(1, 15)) for i in range(draw(st.integers(0, 5)))}
    mes = tuple(draw(st.lists(st.integers(0, 15), min_size=1, max_size=4, unique=True)))
    return Image(mes=mes, ctx_mode=ctx_mode, words=words, symbols=symbols, lines=lines,
                 registers=registers, signals=signals)


@settings(max_examples=150, deadline=None)
@given(images())
def test_any_legal_image_disassembles_to_itself(image: Image) -> None:
    assert image.validate() is None
    text = disassemble(image)
    again = assemble_text(text, "<disassembly>")
    assert again == image
    assert len(listing(image).splitlines()) >= len(image.words)


# --------------------------------------------------------------------------- from source
# One template per mnemonic of the table; {A} {B}: bank-A / bank-B sources (raw or a .reg
# name), {D}: destination, {I}: small immediate, {L}: label, {S}: signal, {X}: $ name.
TEMPLATES: dict[str, str] = {
    "alu": "alu[{D}, {A}, {OP}, {B}]", "alu_shf": "alu_shf[{D}, {A}, {OP}, {B}, {SH}]",
    "dbl_shf": "dbl_shf[{D}, {A}, {B}, >>{N5}]", "immed": "immed[{D}, {V32}]",
    "immed_w0": "immed_w0[{D}, {V16}]", "immed_w1": "immed_w1[{D}, {V16}]",
    "immed_b0": "immed_b0[{D}, {I}]", "immed_b1": "immed_b1[{D}, {I}]",
    "immed_b2": "immed_b2[{D}, {I}]", "immed_b3": "immed_b3[{D}, {I}]",
    "load_addr": "load_addr[{D}, {L}]",
    "ld_field": "ld_field[{D}, {MASK}, {A}, {SH}]",
    "ld_field_w_clr": "ld_field_w_clr[{D}, {MASK}, {B}], load_cc",
    "byte_align_be": "byte_align_be[{D}, {A}, {B}]",
    "byte_align_le": "byte_align_le[{D}, {A}, {B}]",
    "ffs": "ffs[{D}, {A}]", "pop_count": "pop_count[{D}, {B}]",
    "mul_step": "mul_step[{A}, {B}], 24x8_start",
    "br=ctx": "br=ctx[{CTX}, {L}]", "br!=ctx": "br!=ctx[{CTX}, {L}]",
    "br_bset": "br_bset[{A}, {N5}, {L}]", "br_bclr": "br_bclr[{B}, {N5}, {L}]",
    "br=byte": "br=byte[{A}, {BYTE}, {I}, {L}]", "br!=byte": "br!=byte[{B}, {BYTE}, {I}, {L}]",
    "br_signal": "br_signal[{S}, {L}]", "br_!signal": "br_!signal[{S}, {L}]",
    "br_inp_state": "br_inp_state[NN_EMPTY, {L}]",
    "br_!inp_state": "br_!inp_state[SCR_Ring7_Full, {L}]",
    "jump": "jump[{A}, {L}]", "rtn": "rtn[{B}]", "ctx_arb": "ctx_arb[{S}, {S}], any",
    "local_csr_rd": "local_csr_rd[TIMESTAMP_HIGH]", "local_csr_wr": "local_csr_wr[MAILBOX0, {A}]",
    "cam_lookup": "cam_lookup[{D}, {A}]", "cam_write": "cam_write[{A}, {B}, {N4}]",
    "cam_clear": "cam_clear", "cam_read_tag": "cam_read_tag[{D}, {I6}]",
    "cam_read_state": "cam_read_state[{D}, {B}]", "cam_write_state": "cam_write_state[{A}, {N4}]",
    "crc_be": "crc_be[crc_32, {D}, {A}]", "crc_le": "crc_le[crc_10, {D}, {B}]",
    "hash_48": "hash_48[{X}, 1], ctx_swap[{S}]", "hash_64": "hash_64[{X}, 1], sig_done[{S}]",
    "hash_128": "hash_128[{X}, 1]",
    "sram": "sram[read, {X}, {A}, {B}, 1], ctx_swap[{S}]",
    "scratch": "scratch[put, {X}, {A}, {I6}, 1], sig_done[{S}]",
    "dram": "dram[rbuf_rd, --, {A}, {B}, {CNT}]", "msf": "msf[fast_wr, --, {A}, {I6}]",
    "nop": "nop",
}
for _cond in isa.CONDITIONS:
    TEMPLATES[_cond] = f"{_cond}[{{L}}]"


def test_every_mnemonic_has_a_template() -> None:
    assert set(TEMPLATES) == set(isa.BY_MNEMONIC)


FILL = {
    "A": st.sampled_from(["a0", "a5", "x", "y", "*l$index0[3]", "n$2", "$0", "7"]),
    "B": st.sampled_from(["b1", "b9", "z", "w", "*l$index1++", "$$1", "12", "--"]),
    "D": st.sampled_from(["a2", "b3", "x", "z", "$1", "$$0", "n$1", "--", "*l$index0++"]),
    "OP": st.sampled_from(list(isa.ALU_OPS)),
    "SH": st.builds(lambda k, n: f"{k}{n}", st.sampled_from(list(isa.SHIFT_TYPES)),
                    st.integers(0, 31)),
    "N5": st.integers(0, 31).map(str), "N4": st.integers(0, 15).map(str),
    "I": st.integers(0, 255).map(hex), "I6": st.integers(0, 63).map(str),
    "V16": st.integers(0, 0xFFFF).map(hex),
    "V32": st.sampled_from([0, 5, 0x1234, 0xAB0000, 0xFFFFFFFF, 0xFFFF0FFF, 0x7F000000]).map(hex),
    "MASK": st.integers(0, 15).map(lambda m: f"0b{m:04b}"),
    "CTX": st.integers(0, 7).map(str), "BYTE": st.integers(0, 3).map(str),
    "S": st.sampled_from(["sa", "sb", "3"]), "X": st.sampled_from(["$p", "$q", "$2"]),
    "CNT": st.integers(1, 8).map(str),
}
HEADER = ".areg x y\n.breg z w\n.reg $p $q\n.sig sa sb\n"


@st.composite
def programs(draw: st.DrawFn) -> str:
    mnemonics = draw(st.lists(st.sampled_from(sorted(TEMPLATES)), min_size=1, max_size=20))
    n = len(mnemonics)
    lines = [HEADER + draw(st.sampled_from([".ctx_mode 8", ".ctx_mode 4"]))]
    lines.append(".me " + " ".join(map(str, draw(st.lists(st.integers(0, 15), min_size=1,
                                                          max_size=3, unique=True)))))
    labels = [f"lab{i}" for i in range(draw(st.integers(1, 3)))]
    positions = {draw(st.integers(0, n)): lab for lab in labels}
    used_labels = sorted(set(positions.values()))
    for pc, mnemonic in enumerate(mnemonics + [None]):
        if pc in positions:
            lines.append(f"{positions[pc]}#:")
        if mnemonic is None:
            break
        template = TEMPLATES[mnemonic]
        values = {key: draw(strategy) for key, strategy in FILL.items()
                  if "{" + key + "}" in template}
        values["L"] = draw(st.sampled_from(used_labels)) + "#"
        indent = " " * draw(st.integers(0, 8))
        lines.append(indent + template.format(**values))
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_source_round_trip(source: str) -> None:
    image = assemble_text(source, "prog.uc")
    text = disassemble(image)
    again = assemble_text(text, "again.uc")
    assert again == image
    assert disassemble(again) == text


@settings(max_examples=60, deadline=None)
@given(images())
def test_save_load_round_trip(image: Image) -> None:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.img"
        image.save(path)
        loaded = Image.load(path)
    assert loaded == image
    assert disassemble(loaded) == disassemble(image)
