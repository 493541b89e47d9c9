"""The image file: save/load, and clear ImageErrors for every kind of damage."""

import hashlib
import json
from pathlib import Path

import pytest

from npkit.compiler.uc import Image, ImageError, SourceLocation, assemble_text
from npkit.sim import isa

SOURCE = """
.me 2 3
.reg count $pkt
.sig done
loop#:
    alu[count, count, +, 1]
    sram[read, $pkt, count, 0, 2], ctx_swap[done]
    bne[loop#]
"""


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Image, Path]:
    image = assemble_text(SOURCE, "img.uc")
    path = tmp_path / "prog.img"
    image.save(path)
    return image, path


def rewrite(path: Path, change: object, fix_checksum: bool = True) -> None:
    """Apply ``change`` to the JSON body; recompute the checksum like an independent tool."""
    data = json.loads(path.read_text())
    change(data)  # type: ignore[operator]
    if fix_checksum:
        rest = {k: v for k, v in data.items() if k != "checksum"}
        canon = json.dumps(rest, sort_keys=True, separators=(",", ":"))
        data["checksum"] = "sha256:" + hashlib.sha256(canon.encode()).hexdigest()
    path.write_text(json.dumps(data))


def test_round_trip_keeps_everything(saved: tuple[Image, Path]) -> None:
    image, path = saved
    loaded = Image.load(path)
    assert loaded == image
    assert loaded.mes == (2, 3) and loaded.signals == {"done": 1}
    assert loaded.source_of(1) == "img.uc:7:5"
    assert loaded.source_of(99) is None


def test_file_is_documented_json(saved: tuple[Image, Path]) -> None:
    image, path = saved
    data = json.loads(path.read_text())
    assert data["format"] == "npkit-uc-image" and data["version"] == 1
    assert [int(w, 16) for w in data["words"]] == image.words
    assert data["files"] == ["img.uc"]
    assert data["lines"][0] == [0, 6, 5]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ImageError, match="no such image file"):
        Image.load(tmp_path / "absent.img")


@pytest.mark.parametrize("keep", [0, 1, 40, -2])
def test_truncated_file(saved: tuple[Image, Path], keep: int) -> None:
    _, path = saved
    text = path.read_text()
    path.write_text(text[:keep] if keep >= 0 else text[:len(text) // 2])
    with pytest.raises(ImageError, match="truncated or corrupt"):
        Image.load(path)


def test_flipped_checksum(saved: tuple[Image, Path]) -> None:
    _, path = saved
    data = json.loads(path.read_text())
    digest = data["checksum"]
    data["checksum"] = digest[:-1] + ("0" if digest[-1] != "0" else "1")
    path.write_text(json.dumps(data))
    with pytest.raises(ImageError, match="checksum mismatch"):
        Image.load(path)


def test_changed_word_without_new_checksum(saved: tuple[Image, Path]) -> None:
    _, path = saved
    rewrite(path, lambda d: d["words"].__setitem__(0, "0xb800000000"), fix_checksum=False)
    with pytest.raises(ImageError, match="checksum mismatch"):
        Image.load(path)


def test_wrong_version_and_format(saved: tuple[Image, Path]) -> None:
    _, path = saved
    rewrite(path, lambda d: d.__setitem__("version", 99))
    with pytest.raises(ImageError, match="version 99 is not supported"):
        Image.load(path)
    path.write_text('{"hello": 1}')
    with pytest.raises(ImageError, match="not an npkit microcode image"):
        Image.load(path)


def test_illegal_opcode_word(saved: tuple[Image, Path]) -> None:
    _, path = saved
    rewrite(path, lambda d: d["words"].__setitem__(1, f"{31 << 35:#012x}"))
    with pytest.raises(ImageError, match="illegal instruction word at address 1.*opcode 31"):
        Image.load(path)


def test_reserved_bits_word(saved: tuple[Image, Path]) -> None:
    _, path = saved
    nop_with_bit = (isa.BY_MNEMONIC["nop"].opcode << 35) | 1
    rewrite(path, lambda d: d["words"].__setitem__(0, f"{nop_with_bit:#012x}"))
    with pytest.raises(ImageError, match="reserved bits"):
        Image.load(path)


@pytest.mark.parametrize(("word", "message"), [
    (isa.encode(0, {"op": 15}), "reserved code 15"),            # no ALU op 15
    (isa.encode(15, {"csr": 0x7F}), "reserved code 127"),        # no such local CSR
    (isa.encode(14, {"sigs": 1}), "names signal 0"),
    (isa.encode(0, {"dest": 0xB6}), "reserved operand code 0xb6"),
    (isa.encode(19, {"xfer": 0x21}), "reserved transfer-register code 0x21"),
])
def test_reserved_codes(saved: tuple[Image, Path], word: int, message: str) -> None:
    _, path = saved
    rewrite(path, lambda d: d["words"].__setitem__(0, f"{word:#012x}"))
    with pytest.raises(ImageError, match=message):
        Image.load(path)


def test_register_beyond_the_context_mode(saved: tuple[Image, Path]) -> None:
    _, path = saved
    # alu[a20, --, B, --] is fine in 4-context mode only
    word = isa.encode(0, {"dest": 20, "a": 0xB5, "b": 0xB5})
    rewrite(path, lambda d: d["words"].__setitem__(0, f"{word:#012x}"))
    with pytest.raises(ImageError, match="a20 does not exist in 8-context mode"):
        Image.load(path)
    rewrite(path, lambda d: d.__setitem__("ctx_mode", 4))
    assert Image.load(path).words[0] == word


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["lines"].pop(), "source lines for"),
    (lambda d: d.__setitem__("mes", [16]), "ME list"),
    (lambda d: d.__setitem__("ctx_mode", 6), "ctx_mode 6"),
    (lambda d: d["symbols"].__setitem__("far", 1000), "outside the image"),
    (lambda d: d["signals"].__setitem__("s", 0), "not 1..15"),
    (lambda d: d["registers"].__setitem__("r", "q7"), "not a register"),
    (lambda d: d["registers"].__setitem__("$r", "a1"), "does not fit register a1"),
    (lambda d: d["registers"].__setitem__("r", "$$1"), "does not fit register"),
    (lambda d: d["symbols"].__setitem__("1x", 0), "not a valid name"),
    (lambda d: d["registers"].__setitem__("b4", "a1"), "spells a register"),
    (lambda d: d["signals"].__setitem__("count", 3), "both a register and a signal"),
    (lambda d: d["signals"].__setitem__("s s", 2), "not a valid name"),
    (lambda d: d.__delitem__("words"), "corrupt image"),
    (lambda d: d["words"].__setitem__(0, 5), "corrupt image"),
    (lambda d: d["lines"].__setitem__(0, [7, 1, 1]), "corrupt image"),
])
def test_inconsistent_bodies(saved: tuple[Image, Path], change: object, message: str) -> None:
    _, path = saved
    rewrite(path, change)
    with pytest.raises(ImageError, match=message):
        Image.load(path)


def test_image_source_of_and_label_at() -> None:
    image = Image(words=[isa.encode(23, {})], lines=[SourceLocation("f.uc", 3, 9)],
                  symbols={"start": 0})
    assert image.source_of(0) == "f.uc:3:9"
    assert image.label_at(0) == "start" and image.label_at(1) is None


@pytest.mark.parametrize("body", ['"just a string"', "[" * 100_000, "\x00\xff", "{}"])
def test_garbage_files(tmp_path: Path, body: str) -> None:
    path = tmp_path / "g.img"
    path.write_bytes(body.encode("latin-1"))
    with pytest.raises(ImageError):
        Image.load(path)


def test_words_of_wrong_type(saved: tuple[Image, Path]) -> None:
    _, path = saved
    rewrite(path, lambda d: d.__setitem__("words", "abc"))
    with pytest.raises(ImageError, match="'words' is not a list"):
        Image.load(path)
