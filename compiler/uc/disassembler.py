"""Image -> assembler source (``disassemble``) and an annotated listing (``listing``).

The disassembly re-assembles to an identical image: it declares the image's register and
signal names with fixed bindings (``.reg x=a3``, ``.sig s=2``), prints labels where the
symbols point, and puts ``.line "file" LINE COL`` before every instruction so the original
source locations survive.  Each rendered instruction is checked by re-assembling the whole
text; a word with no faithful spelling is written as ``.word 0x...``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from npkit.sim import isa

from .assembler import assemble_text
from .errors import AsmError
from .forms import FORMS, RenderError
from .image import Image
from .operands import gpr_bank, render_code
from .source import quote

INDENT = "        "
_LINE_OF_DIAGNOSTIC = re.compile(r"^<disassembly>:(\d+):", re.MULTILINE)
_MAX_REPAIRS = 4


class _Names:
    """Renders operands with the image's names (first name bound to a register wins)."""

    def __init__(self, image: Image) -> None:
        self.image = image
        self.reg_name: dict[str, str] = {}
        for name, spelling in image.registers.items():
            self.reg_name.setdefault(spelling, name)
        self.sig_name: dict[int, str] = {}
        for name, number in image.signals.items():
            self.sig_name.setdefault(number, name)

    def opnd(self, code: int) -> str:
        try:
            spelling = render_code(code)
        except ValueError as e:
            raise RenderError(str(e)) from None
        return self.reg_name.get(spelling, spelling)

    def target(self, addr: int) -> str:
        label = self.image.label_at(addr)
        return f"{label}#" if label else str(addr)

    def signal(self, number: int) -> str:
        if not 1 <= number <= 15:
            raise RenderError(f"signal {number}")
        return self.sig_name.get(number, str(number))

    def xfer(self, index: int, prefix: str) -> str:
        spelling = f"{prefix}{index}"
        return self.reg_name.get(spelling, spelling)


def render_word(word: int, names: _Names) -> str:
    """Source text for one word; raises RenderError when it has no faithful spelling."""
    try:
        ins, fields = isa.decode(word)
    except ValueError as e:
        raise RenderError(str(e)) from None
    if "a" in fields and "b" in fields and gpr_bank(fields["a"]) and \
            gpr_bank(fields["a"]) == gpr_bank(fields["b"]):
        raise RenderError("breaks the A/B bank rule")
    text = FORMS[ins.format][1](ins, fields, names)
    if "swap" in fields and (fields["swap"] or fields["sig"]):
        kind = "ctx_swap" if fields["swap"] else "sig_done"
        text += f", {kind}[{names.signal(fields['sig'])}]"
    if fields.get("defer"):
        text += f", defer[{fields['defer']}]"
    return text


def raw_word(word: int) -> str:
    return f".word {word:#012x}"


def _render_all(image: Image) -> list[str]:
    """Verified source text per word (``.word`` where no spelling re-assembles exactly)."""
    names = _Names(image)
    texts = []
    for word in image.words:
        try:
            texts.append(render_word(word, names))
        except RenderError:
            texts.append(raw_word(word))
    for _ in range(_MAX_REPAIRS):
        bad = _mismatches(image, texts)
        if not bad:
            return texts
        for pc in bad:
            texts[pc] = raw_word(image.words[pc])
    return texts


def _mismatches(image: Image, texts: list[str]) -> set[int]:
    """Addresses whose text does not re-assemble to the image's word."""
    source, line_to_pc = _compose(image, texts)
    try:
        again = assemble_text(source, "<disassembly>")
    except AsmError as e:
        bad = {line_to_pc[int(n)] for n in _LINE_OF_DIAGNOSTIC.findall(str(e))
               if int(n) in line_to_pc}
        return bad or set(range(len(texts)))
    return {pc for pc, (a, b) in enumerate(zip(again.words, image.words, strict=True))
            if a != b}


def _compose(image: Image, texts: list[str]) -> tuple[str, dict[int, int]]:
    out = [f"; disassembly of an npkit ME image ({len(image.words)} words)",
           f".ctx_mode {image.ctx_mode}", ".me " + " ".join(str(m) for m in image.mes)]
    for name, spelling in image.registers.items():
        out.append(f".reg {name}={spelling}")
    for name, number in image.signals.items():
        out.append(f".sig {name}={number}")
    labels: dict[int, list[str]] = {}
    for name, addr in image.symbols.items():
        labels.setdefault(addr, []).append(name)
    line_to_pc: dict[int, int] = {}
    for pc, text in enumerate(texts):
        out.extend(f"{name}#:" for name in labels.get(pc, []))
        loc = image.lines[pc]
        out.append(f".line {quote(loc.file)} {loc.line} {loc.column}")
        out.append(f"{INDENT}{text}")
        line_to_pc[len(out)] = pc
    out.extend(f"{name}#:" for name in labels.get(len(texts), []))
    return "\n".join(out) + "\n", line_to_pc


def disassemble(image: Image) -> str:
    """Assembler source that assembles back to exactly ``image``."""
    return _compose(image, _render_all(image))[0]


def listing(image: Image, source_text: str | Mapping[str, str] | None = None) -> str:
    """Address, word, disassembly and source line of every instruction.

    ``source_text``: the text of the (single) source file, or a mapping file name -> text;
    when omitted the source files named in the image are read if they exist.
    """
    texts = _render_all(image)
    sources = _SourceLines(source_text)
    labels: dict[int, list[str]] = {}
    for name, addr in image.symbols.items():
        labels.setdefault(addr, []).append(name)
    width = max((len(t) for t in texts), default=0)
    out = [f"; ME image for MEs {', '.join(map(str, image.mes))}, "
           f"{image.ctx_mode}-context mode, {len(image.words)} words"]
    for pc, (word, text) in enumerate(zip(image.words, texts, strict=True)):
        out.extend(f"{'':17}{name}#:" for name in labels.get(pc, []))
        loc = image.lines[pc]
        src = sources.line(loc.file, loc.line)
        where = f"{loc.file}:{loc.line}"
        tail = f"  ; {where}: {src.strip()}" if src is not None else f"  ; {where}"
        out.append(f"{pc:04x}  {word:010x}  {text:<{width}}{tail}")
    out.extend(f"{'':17}{name}#:" for name in labels.get(len(texts), []))
    return "\n".join(out) + "\n"


class _SourceLines:
    def __init__(self, source_text: str | Mapping[str, str] | None) -> None:
        self.given = source_text
        self.cache: dict[str, list[str] | None] = {}

    def line(self, file: str, lineno: int) -> str | None:
        lines = self._lines(file)
        if lines is None or not 0 < lineno <= len(lines):
            return None
        return lines[lineno - 1]

    def _lines(self, file: str) -> list[str] | None:
        if file not in self.cache:
            if isinstance(self.given, str):
                text: str | None = self.given
            elif self.given is not None:
                text = self.given.get(file)
            else:
                try:
                    text = Path(file).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = None
            self.cache[file] = text.splitlines() if text is not None else None
        return self.cache[file]
