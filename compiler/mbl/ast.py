"""The MBL abstract syntax tree: plain dataclasses, each node with its source span."""

from __future__ import annotations

from dataclasses import dataclass, field

from npkit.base.diagnostics import SourceLocation

# ---- types (syntax) -------------------------------------------------------------------


@dataclass
class TypeRef:
    span: SourceLocation


@dataclass
class BitTypeRef(TypeRef):
    width: int | None  # None: the literal was out of range (already reported)


@dataclass
class BoolTypeRef(TypeRef):
    pass


@dataclass
class NamedTypeRef(TypeRef):
    name: str


# ---- expressions ----------------------------------------------------------------------


@dataclass
class Expr:
    span: SourceLocation


@dataclass
class IntLit(Expr):
    value: int
    valid: bool = True  # False: out of range, already reported (the value is 0)


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class Name(Expr):
    name: str


@dataclass
class PacketView(Expr):
    header: str
    offset: Expr


@dataclass
class Call(Expr):
    func: str
    args: list[Expr]


@dataclass
class MethodCall(Expr):
    target: Expr
    method: str
    args: list[Expr]


@dataclass
class Field(Expr):
    target: Expr
    field: str


@dataclass
class Index(Expr):
    target: Expr
    index: Expr


@dataclass
class Slice(Expr):
    target: Expr
    hi: Expr
    lo: Expr


@dataclass
class Unary(Expr):
    op: str
    operand: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass
class Cast(Expr):
    operand: Expr
    type: TypeRef


# ---- statements -----------------------------------------------------------------------


@dataclass
class Stmt:
    span: SourceLocation


@dataclass
class Let(Stmt):
    name: str
    type: TypeRef | None
    value: Expr
    mutable: bool
    otherwise: Stmt | None = None  # `let x = fallible else <stmt>`


@dataclass
class Assign(Stmt):
    target: Expr
    op: str  # "=", "+=", ...
    value: Expr


@dataclass
class Block(Stmt):
    stmts: list[Stmt]


@dataclass
class If(Stmt):
    cond: Expr
    then: Block
    otherwise: Stmt | None


@dataclass
class For(Stmt):
    var: str
    start: Expr
    stop: Expr
    body: Block


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Forward(Stmt):
    port: Expr
    queue: Expr | None


@dataclass
class Drop(Stmt):
    reason: str


@dataclass
class Exception_(Stmt):
    code: Expr


@dataclass
class Next(Stmt):
    label: str | None


@dataclass
class Adjust(Stmt):
    """`packet.push(n) else ...` (prepend n bytes) / `packet.pull(n) else ...` (strip n)."""

    op: str
    amount: Expr
    otherwise: Stmt


@dataclass
class ExprStmt(Stmt):
    expr: Expr


# ---- declarations ---------------------------------------------------------------------


@dataclass
class Decl:
    span: SourceLocation
    name: str


@dataclass
class Import(Decl):
    path: str = ""


@dataclass
class Const(Decl):
    type: TypeRef
    value: Expr


@dataclass
class EnumMember:
    span: SourceLocation
    name: str
    value: Expr


@dataclass
class Enum(Decl):
    base: TypeRef
    members: list[EnumMember]


@dataclass
class FieldDecl:
    span: SourceLocation
    name: str
    type: TypeRef


@dataclass
class Header(Decl):
    fields: list[FieldDecl]
    is_header: bool = True  # False: a struct


@dataclass
class Memory(Decl):
    kind: str  # "lpm" | "hash" | "array" | "counter" | "register"
    key: TypeRef | None
    value: TypeRef | None
    size: Expr
    space: str | None  # "sram" | "scratch" | "local" | None (default sram)


@dataclass
class Param:
    span: SourceLocation
    name: str
    type: TypeRef


@dataclass
class Function(Decl):
    params: list[Param]
    ret: TypeRef | None
    body: Block


@dataclass
class Microblock(Decl):
    body: Block


@dataclass
class Stage:
    span: SourceLocation
    name: str
    block: str
    mes: list[int]


@dataclass
class Connection:
    span: SourceLocation
    ends: list[tuple[str, str | None]]  # (stage, output label)


@dataclass
class Pipeline(Decl):
    ports: tuple[int, int] | None
    stages: list[Stage]
    connections: list[Connection]


@dataclass
class Module:
    file: str
    decls: list[Decl] = field(default_factory=list)
