"""Parse MBL source text into the AST; syntax errors become diagnostics."""

from __future__ import annotations

from antlr4 import CommonTokenStream, InputStream
from antlr4.error.ErrorListener import ErrorListener

from npkit.base.diagnostics import SourceLocation
from npkit.base.numbers import IntLiteralError, clip, parse_int

from . import ast as A
from .diagnostics import DiagnosticBag
from .parser.MBLLexer import MBLLexer
from .parser.MBLParser import MBLParser
from .parser.MBLVisitor import MBLVisitor
from .types import MAX_WIDTH

# A file with more syntax errors than this stops parsing there: past the first few, more
# errors say nothing new, and ANTLR's recovery on a large garbage file is slow.
MAX_SYNTAX_ERRORS = 100
# Brackets open at once (`(`, `[`, `{`); deeper programs are a `too-deep` error before the
# parser runs, so parsing, checking and lowering all stay within Python's stack.
MAX_NESTING = 100


class _TooManyErrors(Exception):
    """Raised by the error listener to stop a parse that has reported enough."""


class _SyntaxErrors(ErrorListener):
    """Turns ANTLR's syntax errors into diagnostics (instead of printing to stderr)."""

    def __init__(self, file: str, bag: DiagnosticBag) -> None:
        self.file = file
        self.bag = bag
        self.count = 0

    def syntaxError(self, recognizer, offendingSymbol, line, column, msg, e):  # noqa: N802
        length = 1
        text = getattr(offendingSymbol, "text", None)
        if text and text != "<EOF>":
            length = len(text)
        where = SourceLocation(self.file, line, column + 1, length)  # ANTLR counts from 0
        self.count += 1
        if self.count > MAX_SYNTAX_ERRORS:
            self.bag.error("too-many-errors", f"more than {MAX_SYNTAX_ERRORS} syntax errors; "
                           "stopped parsing here", where, "fix the first errors and try again")
            raise _TooManyErrors
        if getattr(offendingSymbol, "type", None) == MBLLexer.NODIGITS:
            self.bag.error("syntax", f"integer literal '{text}' has no digits", where,
                           "write digits after the prefix, e.g. 0x0 or 0b1")
            return
        # ANTLR quotes the offending text, which can be a whole long line
        msg = msg.replace(text, clip(text)) if text and len(text) > 40 else msg
        self.bag.error("syntax", f"syntax error: {clip(msg, 300)}", where,
                       "check the statement against docs/language.md (missing ';' or brace?)")


class _Builder(MBLVisitor):
    def __init__(self, file: str, bag: DiagnosticBag) -> None:
        self.file = file
        self.bag = bag
        self.deepest = None  # the last rule visited (where a RecursionError happened)

    def visit(self, tree):
        if hasattr(tree, "start"):
            self.deepest = tree
        return super().visit(tree)

    def int_token(self, token) -> int | None:
        """The value of an INT token; None (and a `literal-range` error at it) when it is
        larger than any MBL value (2^128-1): the one place MBL text becomes an integer."""
        try:
            return parse_int(token.getText(), MAX_WIDTH)
        except IntLiteralError as exc:
            self.bag.error("literal-range", f"integer literal {exc}", self.tspan(token.symbol),
                           f"MBL values have at most {MAX_WIDTH} bits")
            return None

    def span(self, ctx) -> SourceLocation:
        start = ctx.start if hasattr(ctx, "start") else ctx.symbol
        stop = ctx.stop if hasattr(ctx, "stop") else ctx.symbol
        length = 1
        if stop is not None and stop.line == start.line and stop.stop >= start.start:
            length = stop.stop - start.start + 1
        return SourceLocation(self.file, start.line, start.column + 1, length)

    def tspan(self, token) -> SourceLocation:
        return SourceLocation(self.file, token.line, token.column + 1,
                    max(1, len(token.text or "")))

    # ---- program and declarations ----
    def visitProgram(self, ctx):  # noqa: N802
        decls = [self.visit(item.getChild(0)) for item in ctx.item()]
        return A.Module(self.file, decls)

    def visitImportDecl(self, ctx):  # noqa: N802
        raw = ctx.STRING().getText()[1:-1]
        return A.Import(self.span(ctx), raw, raw)

    def visitConstDecl(self, ctx):  # noqa: N802
        return A.Const(self.span(ctx), ctx.ident().getText(), self.visit(ctx.type_()),
                       self.visit(ctx.expr()))

    def visitEnumDecl(self, ctx):  # noqa: N802
        members = [A.EnumMember(self.span(m), m.ident().getText(), self.visit(m.expr()))
                   for m in ctx.enumMember()]
        return A.Enum(self.span(ctx), ctx.ident().getText(), self.visit(ctx.type_()), members)

    def _fields(self, ctx) -> list[A.FieldDecl]:
        return [A.FieldDecl(self.span(f), f.ident().getText(), self.visit(f.type_()))
                for f in ctx.fieldDecl()]

    def visitHeaderDecl(self, ctx):  # noqa: N802
        return A.Header(self.span(ctx), ctx.ident().getText(), self._fields(ctx), True)

    def visitStructDecl(self, ctx):  # noqa: N802
        return A.Header(self.span(ctx), ctx.ident().getText(), self._fields(ctx), False)

    def _space(self, ctx) -> str | None:
        p = ctx.placement()
        return p.space.text if p is not None else None

    def visitTableDecl(self, ctx):  # noqa: N802
        key, value = ctx.type_()
        return A.Memory(self.span(ctx), ctx.ident().getText(), ctx.tableKind.text,
                        self.visit(key), self.visit(value), self.visit(ctx.expr()),
                        self._space(ctx))

    def visitArrayDecl(self, ctx):  # noqa: N802
        return A.Memory(self.span(ctx), ctx.ident().getText(), "array", None,
                        self.visit(ctx.type_()), self.visit(ctx.expr()), self._space(ctx))

    def visitCounterDecl(self, ctx):  # noqa: N802
        return A.Memory(self.span(ctx), ctx.ident().getText(), "counter", None, None,
                        self.visit(ctx.expr()), self._space(ctx))

    def visitRegisterDecl(self, ctx):  # noqa: N802
        return A.Memory(self.span(ctx), ctx.ident().getText(), "register", None,
                        self.visit(ctx.type_()), self.visit(ctx.expr()), self._space(ctx))

    def visitFnDecl(self, ctx):  # noqa: N802
        params = []
        if ctx.params() is not None:
            params = [A.Param(self.span(p), p.ident().getText(), self.visit(p.type_()))
                      for p in ctx.params().param()]
        ret = self.visit(ctx.type_()) if ctx.type_() is not None else None
        return A.Function(self.span(ctx), ctx.ident().getText(), params, ret,
                          self.visit(ctx.body()))

    def visitBlockDecl(self, ctx):  # noqa: N802
        return A.Microblock(self.span(ctx), ctx.ident().getText(), self.visit(ctx.body()))

    def visitPipelineDecl(self, ctx):  # noqa: N802
        ports, stages, conns = None, [], []
        for item in ctx.pipeItem():
            if isinstance(item, MBLParser.PipePortsContext):
                nums = [self.int_token(t) or 0 for t in item.INT()]
                ports = (nums[0], nums[-1])
            elif isinstance(item, MBLParser.PipeStageContext):
                ids = item.ident()
                stages.append(A.Stage(self.span(item), ids[0].getText(), ids[1].getText(),
                                      [self.int_token(t) or 0 for t in item.INT()]))
            else:
                ends = []
                for end in item.pipeEnd():
                    ids = end.ident()
                    ends.append((ids[0].getText(), ids[1].getText() if len(ids) > 1 else None))
                conns.append(A.Connection(self.span(item), ends))
        return A.Pipeline(self.span(ctx), ctx.ident().getText(), ports, stages, conns)

    # ---- statements ----
    def visitBody(self, ctx):  # noqa: N802
        return A.Block(self.span(ctx), [self.visit(s) for s in ctx.stmt()])

    def visitLetElseStmt(self, ctx):  # noqa: N802
        t = self.visit(ctx.type_()) if ctx.type_() is not None else None
        return A.Let(self.span(ctx), ctx.ident().getText(), t, self.visit(ctx.expr()), False,
                     self.visit(ctx.stmt()))

    def visitLetStmt(self, ctx):  # noqa: N802
        t = self.visit(ctx.type_()) if ctx.type_() is not None else None
        return A.Let(self.span(ctx), ctx.ident().getText(), t, self.visit(ctx.expr()),
                     ctx.kw.text == "var")

    def visitAssignStmt(self, ctx):  # noqa: N802
        target, value = ctx.expr()
        return A.Assign(self.span(ctx), self.visit(target), ctx.op.text, self.visit(value))

    def visitIfStmt(self, ctx):  # noqa: N802
        otherwise = None
        if ctx.ifTail is not None:
            otherwise = self.visit(ctx.ifTail)
        elif ctx.elseBody is not None:
            otherwise = self.visit(ctx.elseBody)
        return A.If(self.span(ctx), self.visit(ctx.expr()), self.visit(ctx.body(0)), otherwise)

    def visitForStmt(self, ctx):  # noqa: N802
        start, stop = ctx.expr()
        return A.For(self.span(ctx), ctx.ident().getText(), self.visit(start), self.visit(stop),
                     self.visit(ctx.body()))

    def visitReturnStmt(self, ctx):  # noqa: N802
        return A.Return(self.span(ctx), self.visit(ctx.expr()) if ctx.expr() else None)

    def visitForwardStmt(self, ctx):  # noqa: N802
        exprs = ctx.expr()
        return A.Forward(self.span(ctx), self.visit(exprs[0]),
                         self.visit(exprs[1]) if len(exprs) > 1 else None)

    def visitDropStmt(self, ctx):  # noqa: N802
        return A.Drop(self.span(ctx), ctx.ident().getText())

    def visitExceptionStmt(self, ctx):  # noqa: N802
        return A.Exception_(self.span(ctx), self.visit(ctx.expr()))

    def visitNextStmt(self, ctx):  # noqa: N802
        return A.Next(self.span(ctx), ctx.ident().getText() if ctx.ident() else None)

    def visitAdjustStmt(self, ctx):  # noqa: N802
        return A.Adjust(self.span(ctx), ctx.op.text, self.visit(ctx.expr()),
                        self.visit(ctx.stmt()))

    def visitBlockStmt(self, ctx):  # noqa: N802
        return self.visit(ctx.body())

    def visitExprStmt(self, ctx):  # noqa: N802
        return A.ExprStmt(self.span(ctx), self.visit(ctx.expr()))

    # ---- expressions ----
    def visitPrimaryExpr(self, ctx):  # noqa: N802
        return self.visit(ctx.primary())

    def _args(self, ctx) -> list[A.Expr]:
        return [self.visit(e) for e in ctx.args().expr()] if ctx.args() is not None else []

    def visitMethodExpr(self, ctx):  # noqa: N802
        return A.MethodCall(self.span(ctx), self.visit(ctx.expr()), ctx.ident().getText(),
                            self._args(ctx))

    def visitFieldExpr(self, ctx):  # noqa: N802
        return A.Field(self.span(ctx), self.visit(ctx.expr()), ctx.ident().getText())

    def visitSliceExpr(self, ctx):  # noqa: N802
        t, hi, lo = ctx.expr()
        return A.Slice(self.span(ctx), self.visit(t), self.visit(hi), self.visit(lo))

    def visitIndexExpr(self, ctx):  # noqa: N802
        t, i = ctx.expr()
        return A.Index(self.span(ctx), self.visit(t), self.visit(i))

    def visitUnaryExpr(self, ctx):  # noqa: N802
        return A.Unary(self.span(ctx), ctx.op.text, self.visit(ctx.expr()))

    def visitCastExpr(self, ctx):  # noqa: N802
        return A.Cast(self.span(ctx), self.visit(ctx.expr()), self.visit(ctx.type_()))

    def visitBinExpr(self, ctx):  # noqa: N802
        left, right = ctx.expr()
        return A.Binary(self.tspan(ctx.op), ctx.op.text, self.visit(left), self.visit(right))

    def visitIntLit(self, ctx):  # noqa: N802
        value = self.int_token(ctx.INT())
        return A.IntLit(self.span(ctx), value or 0, valid=value is not None)

    def visitBoolLit(self, ctx):  # noqa: N802
        return A.BoolLit(self.span(ctx), ctx.getText() == "true")

    def visitPacketView(self, ctx):  # noqa: N802
        return A.PacketView(self.span(ctx), ctx.ident().getText(), self.visit(ctx.expr()))

    def visitCallExpr(self, ctx):  # noqa: N802
        return A.Call(self.span(ctx), ctx.ident().getText(), self._args(ctx))

    def visitNameExpr(self, ctx):  # noqa: N802
        return A.Name(self.span(ctx), ctx.getText())

    def visitParenExpr(self, ctx):  # noqa: N802
        return self.visit(ctx.expr())

    def visitBitType(self, ctx):  # noqa: N802
        return A.BitTypeRef(self.span(ctx), self.int_token(ctx.INT()))

    def visitBoolType(self, ctx):  # noqa: N802
        return A.BoolTypeRef(self.span(ctx))

    def visitNamedType(self, ctx):  # noqa: N802
        return A.NamedTypeRef(self.span(ctx), ctx.getText())


def parse_source(text: str, file: str, bag: DiagnosticBag) -> A.Module | None:
    """Parse one file; on syntax errors, report them all (up to MAX_SYNTAX_ERRORS) and
    return None.  Nesting deeper than MAX_NESTING is a `too-deep` error before parsing."""
    before = len(bag.errors)
    lexer = MBLLexer(InputStream(text))
    listener = _SyntaxErrors(file, bag)
    lexer.removeErrorListeners()
    lexer.addErrorListener(listener)
    stream = CommonTokenStream(lexer)
    stream.fill()
    if _too_deep(stream.tokens, file, bag):
        return None
    parser = MBLParser(stream)
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    builder = _Builder(file, bag)
    try:
        tree = parser.program()
        if len(bag.errors) > before:
            return None
        return builder.visit(tree)
    except _TooManyErrors:
        return None
    except RecursionError:  # where it got deepest: the parser's token or the builder's node
        token = builder.deepest.start if builder.deepest is not None \
            else parser.getCurrentToken()
        bag.error("too-deep", "the program nests too deeply to parse here",
                  SourceLocation(file, token.line, token.column + 1),
                  "split deeply nested expressions or blocks (use let, functions)")
        return None


_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")


def _too_deep(tokens, file: str, bag: DiagnosticBag) -> bool:
    """Report (at the first bracket too many) brackets nested deeper than MAX_NESTING."""
    depth = 0
    for tok in tokens:
        text = tok.text
        if text in _OPEN:
            depth += 1
            if depth > MAX_NESTING:
                bag.error("too-deep", f"brackets nest more than {MAX_NESTING} deep here",
                          SourceLocation(file, tok.line, tok.column + 1),
                          "split deeply nested expressions or blocks (use let, functions)")
                return True
        elif text in _CLOSE:
            depth = max(0, depth - 1)
    return False
