"""A readable, indented dump of the AST (for `--emit ast`)."""

from __future__ import annotations

import dataclasses

from npkit.base.diagnostics import SourceLocation


def dump(node: object, indent: int = 0) -> str:
    pad = "  " * indent
    if isinstance(node, list):
        if not node:
            return pad + "[]"
        return "\n".join(dump(x, indent) for x in node)
    if not dataclasses.is_dataclass(node):
        return pad + repr(node)
    name = type(node).__name__.rstrip("_")
    simple, nested = [], []
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, SourceLocation):
            continue
        if dataclasses.is_dataclass(value) or (isinstance(value, list) and value
                                               and dataclasses.is_dataclass(value[0])):
            nested.append((f.name, value))
        else:
            simple.append(f"{f.name}={value!r}")
    span = getattr(node, "span", None)
    where = f"  @{span.line}:{span.column}" if isinstance(span, SourceLocation) else ""
    lines = [f"{pad}{name}({', '.join(simple)}){where}"]
    for fname, value in nested:
        lines.append(f"{pad}  .{fname}:")
        lines.append(dump(value, indent + 2))
    return "\n".join(lines)
