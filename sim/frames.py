"""Frames packed in one buffer: the batch-level hand-off between the tester's C++ and the
chip's core (docs/sim-core.md, "Frames in and out in bulk").

``PackedFrames(data, offsets)``: frame ``i`` is ``data[offsets[i]:offsets[i + 1]]``
(``data`` a C-contiguous uint8 array, ``offsets`` a C-contiguous int64 array of
``len + 1`` non-decreasing positions into it).  It is a read-only sequence of ``bytes``
(a frame is made only when asked for), and a slice of consecutive frames is a view on the
same buffer (no copy).  The C++ on both sides reads the two arrays as they are: the
generator (``npkit.bench.tester._fast``) writes them, the core (``Chip.add_rx_packed``,
``take_tx_packed``) and the analysis and tally read or write them, so a batch crosses
from one extension to the other without a Python object per frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np


class PackedFrames(Sequence[bytes]):
    """Consecutive frames in one uint8 buffer (see the module's docstring)."""

    __slots__ = ("data", "offsets")

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        if data.dtype != np.uint8 or data.ndim != 1 or not data.flags.c_contiguous:
            raise ValueError("PackedFrames: data must be a contiguous 1-d uint8 array")
        if offsets.dtype != np.int64 or offsets.ndim != 1 or not offsets.flags.c_contiguous \
                or len(offsets) < 1:
            raise ValueError("PackedFrames: offsets must be a contiguous 1-d int64 array "
                             "of at least one position")
        self.data = data
        self.offsets = offsets

    @classmethod
    def from_list(cls, datas: Iterable[bytes]) -> PackedFrames:
        """The frames ``datas`` copied into one buffer."""
        datas = list(datas)
        offsets = np.zeros(len(datas) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in datas], out=offsets[1:])
        data = np.frombuffer(b"".join(datas), dtype=np.uint8).copy()
        return cls(data, offsets)

    @classmethod
    def concat(cls, parts: Sequence[PackedFrames]) -> PackedFrames:
        """The frames of ``parts`` in order, in one new buffer (a single part: itself)."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls(np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
        datas, offsets, base = [], [np.zeros(1, dtype=np.int64)], 0
        for part in parts:
            first, last = int(part.offsets[0]), int(part.offsets[-1])
            datas.append(part.data[first:last])
            offsets.append(part.offsets[1:] - first + base)
            base += last - first
        return cls(np.concatenate(datas), np.concatenate(offsets))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> PackedFrames: ...

    def __getitem__(self, index: int | slice) -> Any:
        n = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step != 1:
                return PackedFrames.from_list([self[i] for i in range(start, stop, step)])
            stop = max(stop, start)
            return PackedFrames(self.data, self.offsets[start:stop + 1])
        i = int(index)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("PackedFrames index out of range")
        return self.data[int(self.offsets[i]):int(self.offsets[i + 1])].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        if not len(self):
            return
        first = int(self.offsets[0])
        buffer = self.data[first:int(self.offsets[-1])].tobytes()
        ends = (self.offsets - first).tolist()
        for start, end in zip(ends, ends[1:]):  # noqa: B905 (one shorter by design)
            yield buffer[start:end]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedFrames | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedFrames({len(self)} frames, {self.nbytes} bytes)"

    @property
    def nbytes(self) -> int:
        """Bytes of all the frames."""
        return int(self.offsets[-1] - self.offsets[0])

    def lengths(self) -> np.ndarray:
        """Each frame's length (int64)."""
        return np.diff(self.offsets)

    def take(self, indices: np.ndarray) -> PackedFrames:
        """The frames at ``indices`` (in that order), in one new buffer."""
        indices = np.asarray(indices, dtype=np.int64)
        starts, ends = self.offsets[indices], self.offsets[indices + 1]
        lengths = ends - starts
        offsets = np.zeros(len(indices) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if not len(indices):
            return PackedFrames(np.zeros(0, dtype=np.uint8), offsets)
        # every byte's position in the source: its frame's start + its place in the frame
        within = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        data = self.data[np.repeat(starts, lengths) + within]
        return PackedFrames(np.ascontiguousarray(data), offsets)
