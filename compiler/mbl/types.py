"""Semantic types of MBL and the layout of headers, structs and memories."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_WIDTH = 128


@dataclass(frozen=True)
class Type:
    def show(self) -> str:
        return "?"


@dataclass(frozen=True)
class Bits(Type):
    width: int

    def show(self) -> str:
        return f"bit<{self.width}>"


@dataclass(frozen=True)
class Bool(Type):
    def show(self) -> str:
        return "bool"


@dataclass(frozen=True)
class Literal(Type):
    """An integer literal (or constant expression of literals) that has no width yet."""

    def show(self) -> str:
        return "integer literal"


@dataclass(frozen=True)
class Void(Type):
    def show(self) -> str:
        return "nothing"


@dataclass(frozen=True)
class Error(Type):
    """The type of an expression that already produced a diagnostic (stops cascades)."""

    def show(self) -> str:
        return "<error>"


@dataclass(frozen=True)
class FieldInfo:
    name: str
    width: int
    offset: int  # bit offset from the start, MSB first


@dataclass(frozen=True)
class Layout:
    """A header or struct: named bit fields packed MSB first, no padding between fields."""

    name: str
    fields: tuple[FieldInfo, ...]
    is_header: bool

    @property
    def bits(self) -> int:
        return sum(f.width for f in self.fields)

    @property
    def bytes(self) -> int:
        return (self.bits + 7) // 8

    @property
    def words(self) -> int:
        return max(1, (self.bits + 31) // 32)

    def field(self, name: str) -> FieldInfo | None:
        return next((f for f in self.fields if f.name == name), None)


@dataclass(frozen=True)
class View(Type):
    """A reference to a header in the packet (bounds already checked) or a struct in memory."""

    layout: Layout
    in_packet: bool

    def show(self) -> str:
        return self.layout.name


@dataclass(frozen=True)
class MemoryInfo:
    name: str
    kind: str  # lpm | hash | array | counter | register
    key: Bits | None
    value: Type | None  # Bits or View(struct); counters: Bits(32)
    size: int
    space: str
    words_per_entry: int
    word_offset: int = 0  # placed by the allocator

    @property
    def words(self) -> int:
        return self.size * self.words_per_entry


@dataclass(frozen=True)
class MemType(Type):
    memory: MemoryInfo

    def show(self) -> str:
        return f"{self.memory.kind} {self.memory.name}"


# Memory spaces: capacity in 32-bit words (FACTS.md §1: SRAM 4 x 64 MB, scratch 16 KB,
# local memory 640 words per ME).
SPACE_WORDS: dict[str, int] = {"sram": 4 * (64 << 20) // 4, "scratch": (16 << 10) // 4,
                               "local": 640}


@dataclass(frozen=True)
class MetaField:
    name: str
    word: int
    width: int
    writable: bool


# Per-packet metadata: one 32-bit word each in the native metadata record (META_WORDS per
# packet).  Words 8.. hold the verdict, written only by verdict statements.
META_FIELDS: dict[str, MetaField] = {m.name: m for m in (
    MetaField("in_port", 0, 16, False),
    MetaField("len", 1, 16, False),
    MetaField("out_port", 2, 16, True),
    MetaField("queue", 3, 8, True),
    MetaField("flow_id", 4, 32, True),
    MetaField("next_hop", 5, 32, True),
    MetaField("class_id", 6, 8, True),
    MetaField("user", 7, 32, True),
)}
META_WORDS = 12
META_VERDICT = 8  # 0 none, 1 forward, 2 drop, 3 exception, 4 next
META_CODE = 9  # drop reason id / exception code / next label id
META_HEAD = 10  # signed: bytes the packet start moved by push/pull (native target)
# Receive stages (docs/datapath.md): the mpacket's status, bit 0 SOP, bit 1 EOP.  Set by the
# target before a receive stage runs; 0 for everything else.
META_MEDIA = 11
MEDIA_SOP, MEDIA_EOP = 1, 2
VERDICT_NONE, VERDICT_FORWARD, VERDICT_DROP, VERDICT_EXCEPTION, VERDICT_NEXT = range(5)
VERDICT_CONSUMED = 5  # media.consume(): an mpacket absorbed into its frame


@dataclass
class Reasons:
    """Drop reasons and next-labels by name -> small integer id (in order of first use)."""

    ids: dict[str, int] = field(default_factory=dict)

    def id(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids) + 1)

    def name(self, ident: int) -> str:
        return next((n for n, i in self.ids.items() if i == ident), f"#{ident}")
