"""Write ``sim/rtl/npk_isa.svh``: the RTL microengine's decoder, generated from ``sim/isa.py``.

The SystemVerilog twin of ``sim/isa_gen.py`` (which writes the C++ decoder header): every
number the RTL needs about the encoding comes from the ISA table, so the ISA keeps one
source of truth.  ``npk_me.sv`` includes the file inside its module body (Yosys 0.23, which
elaborates the RTL for docs/rtl.md, reads no package import, ``return`` or enum-typed
function).  It holds

* the opcodes, enum values (ALU ops, conditions, immed variants, local CSRs ...) and the
  operand-class ranges as ``localparam``\\ s;
* one packed struct per format (``fmt_alu_t`` ...), whose fields line up with the 35-bit
  payload, so assigning the payload to a ``fmt_alu_t`` *is* the field decoder;
* ``opnd_kind()``: an 8-bit operand code -> its class (``OK_GPR_A`` ...), and ``opnd_index()``;
* ``word_legal()``: reserved opcode, reserved payload bits or a reserved enum value make a
  word illegal -- the checks the C++ decoder makes at load (register ranges aside, which
  depend on the context mode and are checked in the core).

Run ``python sim/rtl/gen_decoder.py`` after changing the table; tests/sim/rtl checks that
the committed file is up to date.
"""

from __future__ import annotations

from pathlib import Path

from npkit.sim import isa as isa_table
from npkit.sim.isa_gen import cpp_name

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "npk_isa.svh"

def sv_name(text: str) -> str:
    """An identifier for an enum spelling: '~B' -> NOT_B, '+carry' -> PLUS_CARRY (the C++
    decoder's names, so both decoders spell every constant alike)."""
    return cpp_name(text)


def _enum_lines(title: str, table: dict[str, int], width: int) -> list[str]:
    prefix = title.upper()
    lines = [f"  // {title}"]
    for key, value in table.items():
        ident = f"{prefix}_{sv_name(key)}"
        lines.append(f"  localparam logic [{width - 1}:0] {ident} = {width}'d{value};  // {key}")
    return lines


def _enum_widths(isa) -> dict[str, int]:
    """The field width each enum is stored in (from the formats that use it)."""
    widths: dict[str, int] = {"LOCAL_CSRS": next(
        f.width for f in isa.FORMATS["local_csr"].fields if f.name == "csr")}
    for fmt in isa.FORMATS.values():
        for fld in fmt.fields:
            if fld.kind.startswith("enum:") and fld.kind != "enum:CMD":
                widths[fld.kind[5:]] = fld.width
    for name in ("SRAM_CMDS", "SCRATCH_CMDS", "DRAM_CMDS", "MSF_CMDS"):
        widths[name] = next(f.width for f in isa.FORMATS["mem"].fields if f.name == "cmd")
    return widths


def _struct_lines(isa) -> list[str]:
    lines = ["  // formats: a packed struct per format over the 35-bit payload (MSB first)"]
    for fmt in isa.FORMATS.values():
        used = sum(f.width for f in fmt.fields)
        lines.append("  typedef struct packed {")
        for fld in fmt.fields:
            lines.append(f"    logic [{fld.width - 1}:0] {fld.name}_f;  // {fld.kind}")
        pad = isa.PAYLOAD_BITS - used
        if pad:
            lines.append(f"    logic [{pad - 1}:0] unused_f;")
        lines.append(f"  }} fmt_{fmt.name}_t;")
        mask = 0
        for fld, pos in fmt.layout():
            mask |= ((1 << fld.width) - 1) << pos
        lines.append(f"  localparam logic [{isa.PAYLOAD_BITS - 1}:0] USED_{fmt.name.upper()} = "
                     f"{isa.PAYLOAD_BITS}'h{mask:x};")
    return lines


def _operand_lines(isa) -> list[str]:
    classes = isa.OPERAND_CLASSES
    kinds = [f"OK_{sv_name(c.name)}" for c in classes] + ["OK_RESERVED"]
    lines = ["  // operand classes"]
    lines += [f"  localparam logic [4:0] {k} = 5'd{i};" for i, k in enumerate(kinds)]
    for cls in classes:
        ident = sv_name(cls.name)
        lines.append(f"  localparam logic [7:0] OPND_{ident}_FIRST = 8'h{cls.first:02x};")
        lines.append(f"  localparam int OPND_{ident}_COUNT = {cls.count};")
    # (functions assign their name instead of `return`: Yosys 0.23 reads no `return`)
    lines += [f"  localparam logic [7:0] OPERAND_NONE = 8'h{isa.OPERAND_NONE:02x};",
              "  function automatic logic [4:0] opnd_kind(input logic [7:0] code);",
              "    opnd_kind = OK_RESERVED;"]
    for cls in reversed(classes):  # the last assignment that matches wins: none overlap
        ident = sv_name(cls.name)
        last = cls.first + cls.count - 1
        tests = ([f"code >= 8'h{cls.first:02x}"] if cls.first > 0 else []) + \
                ([f"code <= 8'h{last:02x}"] if last < 0xFF else [])
        lines.append(f"    if ({' && '.join(tests)}) opnd_kind = OK_{ident};")
    lines += ["  endfunction",
              "  // the index inside the class: register number, LM offset k, immediate value",
              "  function automatic logic [7:0] opnd_index(input logic [7:0] code);",
              "    case (opnd_kind(code))"]
    for cls in classes:
        lines.append(f"      OK_{sv_name(cls.name)}: opnd_index = code - 8'h{cls.first:02x};")
    lines += ["      default: opnd_index = 8'h00;", "    endcase", "  endfunction",
              "  // readable / writable, as the table says",
              "  function automatic logic opnd_writable(input logic [7:0] code);",
              "    case (opnd_kind(code))"]
    for cls in classes:
        lines.append(f"      OK_{sv_name(cls.name)}: opnd_writable = 1'b{int(cls.writable)};")
    lines += ["      default: opnd_writable = 1'b0;", "    endcase", "  endfunction"]
    return lines


def _legal_lines(isa) -> list[str]:
    """word_legal: the opcode exists, no reserved bit is set, every enum field is defined."""
    payload = isa.PAYLOAD_BITS
    lines = [f"  function automatic logic word_legal(input logic [{isa.WORD_BITS - 1}:0] w);",
             f"    logic [{payload - 1}:0] p;",
             f"    p = w[{payload - 1}:0];",
             f"    case (w[{isa.WORD_BITS - 1}:{payload}])"]
    for ins in isa.INSTRUCTIONS:
        fmt = isa.FORMATS[ins.format]
        conds = [f"((p & ~USED_{fmt.name.upper()}) == '0)"]
        for fld, pos in fmt.layout():
            if not fld.kind.startswith("enum:") and fld.kind != "csr":
                continue
            if fld.kind == "csr":
                table = isa.LOCAL_CSRS
            elif fld.kind == "enum:CMD":
                table = ins.cmds
            else:
                table = isa.ENUMS[fld.kind[5:]]
            values = sorted(set(table.values()))
            if values == list(range(1 << fld.width)):
                continue
            sel = f"p[{pos + fld.width - 1}:{pos}]"
            if values == list(range(values[-1] + 1)):
                conds.append(f"({sel} <= {fld.width}'d{values[-1]})")
            else:
                alts = " || ".join(f"{sel} == {fld.width}'d{v}" for v in values)
                conds.append(f"({alts})")
        lines.append(f"      {isa.OPCODE_BITS}'d{ins.opcode}: word_legal = {' && '.join(conds)};"
                     f"  // {ins.name}")
    lines += ["      default: word_legal = 1'b0;", "    endcase", "  endfunction"]
    return lines


def generate() -> str:
    isa = isa_table
    widths = _enum_widths(isa)
    out = [
        "// GENERATED by sim/rtl/gen_decoder.py from sim/isa.py -- do not edit.",
        "// The RTL microengine's decoder: opcodes, formats, operand classes, enums, legality.",
        "/* verilator lint_off UNUSEDPARAM */",
        f"  localparam int WORD_BITS = {isa.WORD_BITS};",
        f"  localparam int OPCODE_BITS = {isa.OPCODE_BITS};",
        f"  localparam int PAYLOAD_BITS = {isa.PAYLOAD_BITS};",
        f"  localparam int TARGET_BITS = {isa.TARGET_BITS};",
        f"  localparam logic [5:0] XFER_NONE = 6'h{isa.XFER_NONE:02x};",
        "  // major opcodes",
    ]
    for ins in isa.INSTRUCTIONS:
        out.append(f"  localparam logic [{isa.OPCODE_BITS - 1}:0] OP_{sv_name(ins.name)} = "
                   f"{isa.OPCODE_BITS}'d{ins.opcode};")
    for title, table in isa.ENUMS.items():
        out += _enum_lines(title, table, widths[title])
    out += _struct_lines(isa)
    out += _operand_lines(isa)
    out += _legal_lines(isa)
    out += ["/* verilator lint_on UNUSEDPARAM */"]
    return "\n".join(out) + "\n"


def main() -> None:
    text = generate()
    if not OUTPUT.exists() or OUTPUT.read_text() != text:
        OUTPUT.write_text(text)


if __name__ == "__main__":
    main()
