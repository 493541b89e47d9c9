"""MBL source locations through LLVM: the lowering's !dbg survives optimization and inlining,
and DebugLocations maps optimized instructions back to file:line:col (positions computed
here from the source text; file names from the checker's own diagnostics)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from npkit.compiler.mbl import CompileError, compile_file
from npkit.compiler.mbl.debuginfo import DebugLocations
from npkit.compiler.mbl.lower import lower
from npkit.compiler.mbl.passes import optimize
from npkit.compiler.mbl.types import META_CODE, META_FIELDS
from npkit.compiler.me.wir import Loc

REPO = Path(__file__).resolve().parents[2]

LIB = """\
// a library file: a memory and a function that reads it
array weights : bit<32> [16] in sram;

fn weight(i: bit<32>) -> bit<32> {
    let w = weights[i];
    return w + 5;
}
"""

MAIN = """\
import "{lib}";

header h_t {{ a: bit<32>; b: bit<32>; }}

block first {{
    let h = packet<h_t>(0) else drop(short);
    meta.user = weight(h.a);
    if h.b == 7 {{ drop(seven); }}
    forward(2);
}}

block second {{
    let h = packet<h_t>(0) else drop(short);
    meta.flow_id = weight(h.b);
    exception(9);
}}
"""


def position(source: str, snippet: str, occurrence: int = 0) -> tuple[int, int]:
    """1-based line and column of the nth occurrence of snippet in source."""
    at = -1
    for _ in range(occurrence + 1):
        at = source.index(snippet, at + 1)
    line = source.count("\n", 0, at) + 1
    return line, at - (source.rfind("\n", 0, at) + 1) + 1


def checker_file_name(path: Path, main: Path) -> str:
    """The file name the checker's diagnostics give for an error in the imported file."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\nconst broken : bit<8> = 1000;\n", encoding="utf-8")
    try:
        with pytest.raises(CompileError) as err:
            compile_file(main)
    finally:
        path.write_text(text, encoding="utf-8")
    return err.value.diagnostics[0].location.file


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A two-file program (lib directory name with a space and a non-ASCII letter)."""
    root = tmp_path_factory.mktemp("dbg")
    lib_dir = root / "my lïb"
    lib_dir.mkdir()
    lib = lib_dir / "weights.mbl"
    lib.write_text(LIB, encoding="utf-8")
    main = root / "main.mbl"
    main.write_text(MAIN.format(lib="my lïb/weights.mbl"), encoding="utf-8")
    lib_name = checker_file_name(lib, main)
    program = compile_file(main)
    module = optimize(lower(program))
    return module, DebugLocations(module), str(main), lib_name, program


def instructions(module, function: str):
    fn = next(f for f in module.functions if f.name == function)
    return [i for b in fn.blocks for i in b.instructions]


def the(module, function: str, pattern: str):
    """The one instruction of the function whose text matches pattern."""
    found = [i for i in instructions(module, function) if re.search(pattern, str(i))]
    assert len(found) == 1, [str(i) for i in found]
    return found[0]


def test_inlined_memory_read_is_in_the_imported_file(built):
    module, locs, _, lib_name, _ = built
    line, col = position(LIB, "weights[i]")
    for block in ("mbl.block.first", "mbl.block.second"):
        read = the(module, block, r"call i32 @npu\.mem\.read")
        assert locs.loc_of(read) == Loc(lib_name, line, col)


def test_inlined_arithmetic_keeps_its_own_column(built):
    module, locs, _, lib_name, _ = built
    add = the(module, "mbl.block.first", r"= add i32 .*, 5,")
    # a binary expression's span is its operator (where the checker points at it)
    assert locs.loc_of(add) == Loc(lib_name, *position(LIB, "+ 5"))


def meta_write(word: int, value: int | None = None) -> str:
    """A pattern for npu.meta.write of a word (and a constant value)."""
    tail = f", i32 {value}\\)" if value is not None else ","
    return rf"@npu\.meta\.write\(ptr %[.\w]+, i32 {word}{tail}"


@pytest.mark.parametrize("block, word, value, snippet", [
    ("mbl.block.first", META_FIELDS["user"].word, None, "meta.user = "),
    ("mbl.block.first", META_CODE, "seven", "drop(seven)"),
    ("mbl.block.first", META_FIELDS["out_port"].word, 2, "forward(2)"),
    ("mbl.block.second", META_FIELDS["flow_id"].word, None, "meta.flow_id = "),
    ("mbl.block.second", META_CODE, 9, "exception(9)"),
])
def test_statements_of_each_block_map_to_their_line(built, block, word, value, snippet):
    """Both blocks: the second function's metadata numbers differ from what str(instr)
    prints on its own, so this also checks the module-wide numbering."""
    module, locs, main_name, _, program = built
    if isinstance(value, str):
        value = program.reasons.id(value)
    source = MAIN.format(lib="my lïb/weights.mbl")
    instr = the(module, block, meta_write(word, value))
    assert locs.loc_of(instr) == Loc(main_name, *position(source, snippet))


def all_instructions(module):
    return [i for f in module.functions if not f.is_declaration
            for b in f.blocks for i in b.instructions]


@pytest.mark.parametrize("path", ["examples/router/router.mbl", "microblocks/l2_bridge.mbl",
                                  "tests/mbl/programs/ipv4_ttl.mbl"])
def test_every_instruction_of_real_programs_has_a_location(path):
    """Only LLVM's merges (phis, the shared ret, their branches) and what SimplifyCFG
    speculates out of a short-circuit `&&` / `||` into the `select` that replaces the branch
    (LLVM drops a hoisted instruction's location on purpose) may lose their line; every
    location points into its file, at a column inside the line."""
    program = compile_file(REPO / path)
    module = optimize(lower(program))
    locs = DebugLocations(module)
    missing = []
    for f in module.functions:
        if f.is_declaration:
            continue
        for block in f.blocks:
            instrs = list(block.instructions)
            for k, instr in enumerate(instrs):
                loc = locs.loc_of(instr)
                if loc is None:
                    if not speculated_into_select(instr, instrs[k + 1:], locs):
                        missing.append(instr.opcode)
                    continue
                lines = program.sources[loc.file].splitlines()
                assert 1 <= loc.line <= len(lines) and \
                    1 <= loc.column <= len(lines[loc.line - 1]), loc
    assert set(missing) <= {"phi", "ret", "br"}, missing


def speculated_into_select(instr, after, locs) -> bool:
    """`instr` is used by a located `select` later in its block (a folded short circuit)."""
    name = str(instr).split("=", 1)[0].strip()
    return bool(name) and any(
        i.opcode == "select" and locs.loc_of(i) is not None
        and re.search(re.escape(name) + r"\b", str(i).split("=", 1)[1]) for i in after)


def strip_debug(text: str) -> str:
    """LLVM IR text without debug metadata, attachments, variable records (dbg.declare
    calls, #dbg_value) and comments."""
    text = re.sub(r",? !dbg !\d+", "", text)
    return "\n".join(line for line in text.splitlines()
                     if line and not line.startswith(("!", ";", "source_filename"))
                     and "llvm.dbg." not in line and not line.lstrip().startswith("#dbg_"))


@pytest.mark.parametrize("path", ["examples/router/router.mbl", "microblocks/l2_bridge.mbl"])
def test_debug_info_does_not_change_the_optimized_code(path):
    lowered = str(lower(compile_file(REPO / path), variables=True))
    assert "!dbg" in lowered and "llvm.dbg.declare" in lowered
    with_debug = strip_debug(str(optimize(lowered)))
    without_debug = strip_debug(str(optimize(strip_debug(lowered))))
    assert with_debug == without_debug


def test_emitted_llvm_keeps_metadata_at_the_end():
    from npkit.compiler.mbl import emit

    text = emit(compile_file(REPO / "tests/mbl/programs/ipv4_ttl.mbl"), "llvm")
    code, _, metadata = text.partition("\n!")
    assert "define void @\"mbl.block.ipv4_ttl\"" in code and "DILocation" not in code
    assert "DICompileUnit" in metadata and '"Debug Info Version", i32 3' in metadata
