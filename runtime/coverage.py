"""Line coverage of a run on the simulated chip: MBL sources and microcode, in lcov format.

The core counts retired instructions per ME and PC while coverage is on
(``Chip.enable_coverage``, docs/sim-core.md "Debug hooks"); each image maps its PCs to
source lines (``Image.lines``: the MBL line for compiled body code, the ``.uc`` line for
hand-written microcode such as the dispatch loop and the media stages).  A source line's
count is the largest count of its instructions, summed over the MEs running the image: the
number of times the line was executed, not the number of its instructions executed.

    chip.enable_coverage()
    chip.run(...)
    cov = Coverage.of_chip(chip)
    cov.write_lcov("run.info")          # genhtml run.info -o html/   (Debian package lcov)

Lines with no instruction (comments, declarations, code the optimiser removed) are not in
the report: lcov lists only lines that can be executed.  Files that no longer exist (a
linker's temporary body ``.uc``) are left out unless asked for, since genhtml needs every
file it lists.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.base.errors import NpkitError


@dataclass
class Coverage:
    """Execution counts per source file and line (only lines that have instructions)."""

    lines: dict[str, dict[int, int]] = field(default_factory=dict)

    @classmethod
    def of_chip(cls, chip: Any) -> Coverage:
        """The coverage of everything ``chip`` ran since ``enable_coverage``."""
        if not len(chip.coverage_counts(0)):
            raise NpkitError("no coverage recorded: call chip.enable_coverage() before running")
        by_image: dict[int, tuple[Any, list[int]]] = {}
        for me in range(chip.config.me_count):
            image = chip.image_on(me)
            if image is not None:
                by_image.setdefault(id(image), (image, []))[1].append(me)
        cov = cls()
        for image, mes in by_image.values():
            counts = [0] * len(image.words)
            for me in mes:
                per_pc = chip.coverage_counts(me)
                for pc in range(len(counts)):
                    counts[pc] += int(per_pc[pc])
            cov.add_image(image, counts)
        return cov

    def add_image(self, image: Any, counts: Iterable[int]) -> None:
        """Add an image's per-PC counts (a line: the largest count of its PCs)."""
        best: dict[tuple[str, int], int] = defaultdict(int)
        for pc, count in enumerate(counts):
            loc = image.lines[pc] if pc < len(image.lines) else None
            if loc is None or not loc.file or loc.line <= 0:
                continue
            key = (str(loc.file), int(loc.line))
            best[key] = max(best[key], count)
        for (file, line), count in best.items():
            per_file = self.lines.setdefault(file, {})
            per_file[line] = per_file.get(line, 0) + count

    def merge(self, other: Coverage) -> Coverage:
        """Both runs' counts added (e.g. the chips of a system, or several trials)."""
        out = Coverage({f: dict(lines) for f, lines in self.lines.items()})
        for file, lines in other.lines.items():
            mine = out.lines.setdefault(file, {})
            for line, count in lines.items():
                mine[line] = mine.get(line, 0) + count
        return out

    def summary(self) -> dict[str, tuple[int, int]]:
        """Per file: (lines executed, lines with instructions)."""
        return {f: (sum(1 for c in lines.values() if c), len(lines))
                for f, lines in sorted(self.lines.items())}

    def to_lcov(self, missing_files: bool = False, test_name: str = "npkit") -> str:
        """The lcov tracefile text (geninfo's format: TN, SF, DA, LF, LH, end_of_record)."""
        out = []
        for file, lines in sorted(self.lines.items()):
            if not missing_files and not Path(file).is_file():
                continue
            out.append(f"TN:{test_name}")
            out.append(f"SF:{Path(file).resolve() if Path(file).is_file() else file}")
            out.extend(f"DA:{line},{count}" for line, count in sorted(lines.items()))
            out.append(f"LF:{len(lines)}")
            out.append(f"LH:{sum(1 for c in lines.values() if c)}")
            out.append("end_of_record")
        return "\n".join(out) + ("\n" if out else "")

    def write_lcov(self, path: str | Path, missing_files: bool = False) -> None:
        Path(path).write_text(self.to_lcov(missing_files), encoding="utf-8")


def parse_lcov(text: str) -> dict[str, dict[int, int]]:
    """An lcov tracefile's line counts per source file (what genhtml reads of it)."""
    out: dict[str, dict[int, int]] = {}
    current: dict[int, int] | None = None
    for raw in text.splitlines():
        tag, _, value = raw.partition(":")
        if tag == "SF":
            current = out.setdefault(value, {})
        elif tag == "DA" and current is not None:
            line, count = value.split(",")[:2]
            current[int(line)] = current.get(int(line), 0) + int(count)
        elif tag == "end_of_record":
            current = None
    return out
