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

Runs spread over many chips and processes (``npkit bench --coverage``: every trial of a lab
suite, in dask workers too) go through a ``CoverageSpool``: each trial's counts since the
last trial on the same chip are written as one lcov file into a shared folder, and
``merge_lcov`` adds the files up line by line (lcov's own merge rule) into one report.

Lines with no instruction (comments, declarations, code the optimiser removed) are not in
the report: lcov lists only lines that can be executed.  Files that no longer exist (a
linker's temporary body ``.uc``) are left out unless asked for, since genhtml needs every
file it lists.
"""

from __future__ import annotations

import os
import uuid
import weakref
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

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
        return cls.of_counts(chip, {me: chip.coverage_counts(me)
                                    for me in range(chip.config.me_count)})

    @classmethod
    def of_counts(cls, chip: Any, per_me: Mapping[int, Any]) -> Coverage:
        """The coverage of per-PC counts ``per_me`` (ME -> counts) of the images on ``chip``."""
        by_image: dict[int, tuple[Any, list[int]]] = {}
        for me in per_me:
            image = chip.image_on(me)
            if image is not None:
                by_image.setdefault(id(image), (image, []))[1].append(me)
        cov = cls()
        for image, mes in by_image.values():
            size = len(image.words)
            counts = np.zeros(size, dtype=np.uint64)
            for me in mes:
                counts += np.asarray(per_me[me], dtype=np.uint64)[:size]
            cov.add_image(image, (int(c) for c in counts))
        return cov

    @classmethod
    def from_lcov(cls, text: str) -> Coverage:
        """The counts of an lcov tracefile (records of one file added up)."""
        return cls(parse_lcov(text))

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

    def summary(self, missing_files: bool = False) -> dict[str, tuple[int, int]]:
        """Per file: (lines executed, lines with instructions); the files `to_lcov` writes
        (those that no longer exist only with ``missing_files``)."""
        return {f: (sum(1 for c in lines.values() if c), len(lines))
                for f, lines in sorted(self.lines.items())
                if missing_files or Path(f).is_file()}

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


def merge_lcov(paths: Iterable[str | Path]) -> Coverage:
    """The lcov tracefiles ``paths`` added up: per source file and line, the counts summed
    (what ``lcov -a`` does with line counts)."""
    out = Coverage()
    for path in paths:
        out = out.merge(Coverage.from_lcov(Path(path).read_text(encoding="utf-8")))
    return out


COVERAGE_ENV = "NPKIT_COVERAGE"  # an lcov file the differential tests' chip runs add to


def add_to_lcov(path: str | Path, cov: Coverage) -> Coverage:
    """``cov`` added to the lcov file ``path`` (created if missing); the sum written back.
    Source files that do not exist (a linker's temporary ``.uc``, new at every link) are
    left out, so genhtml can render the file."""
    target = Path(path)
    total = cov if not target.is_file() else merge_lcov([target]).merge(cov)
    total = Coverage({f: n for f, n in total.lines.items() if Path(f).is_file()})
    total.write_lcov(target)
    return total


@contextmanager
def coverage_from_env(chip: Any, env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Around a run of a fresh ``chip``: when ``NPKIT_COVERAGE`` names a file, count the
    chip's coverage and add it to that file afterwards (the differential tests' chip side,
    tests/conformance/run_both.py; remove the file first for a fresh sum)."""
    path = (os.environ if env is None else env).get(COVERAGE_ENV)
    if not path:
        yield
        return
    chip.enable_coverage()
    yield
    add_to_lcov(path, Coverage.of_chip(chip))


class CoverageSpool:
    """Coverage of many trials on many chips, one lcov file per trial in ``folder``.

    ``watch`` turns a chip's counting on; ``take`` after a trial writes what the chips ran
    since the last ``take`` on them.  The core's counts are cumulative and survive
    ``Chip.restore`` (they are debug control, not chip state), so a chip reused trial after
    trial through its snapshot is read as a difference against what was last taken.  The
    spool is per process (a dask worker rebuilds its own from the folder's name); the files
    are named by process and a random id, so workers sharing the folder never collide.
    ``merged()`` is the sum of every file written there."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._taken: weakref.WeakKeyDictionary[Any, dict[int, np.ndarray]] = \
            weakref.WeakKeyDictionary()

    def watch(self, chips: Iterable[Any]) -> None:
        for chip in chips:
            chip.enable_coverage()

    def take(self, chips: Iterable[Any]) -> Path:
        """Write the chips' counts since their last ``take`` as one lcov file; its path."""
        cov = Coverage()
        for chip in chips:
            now = {me: chip.coverage_counts(me).astype(np.uint64)
                   for me in range(chip.config.me_count)}
            before = self._taken.get(chip, {})
            delta = {me: counts - before[me] if me in before else counts
                     for me, counts in now.items() if len(counts)}
            self._taken[chip] = now
            cov = cov.merge(Coverage.of_counts(chip, delta))
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{os.getpid()}-{uuid.uuid4().hex}.info"
        # every file kept (a linker's temporary .uc may be gone by the merge): the merged
        # report drops missing files once, when it is written
        cov.write_lcov(path, missing_files=True)
        return path

    def merged(self) -> Coverage:
        return merge_lcov(sorted(self.folder.glob("*.info")))


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
