"""Conditions on debugger breakpoints (`break ipv4_fwd.mbl:79 if ttl == 1`): comparisons
joined by `and`, each a name, an operator and a value.  The debugger looks the names up
in the stopped context when the breakpoint fires (an MBL variable, a register, or a
header field of the context's packet as `packet.FIELD` / `packet.LAYER.FIELD`) and runs on
when the condition does not hold, as gdb's conditional breakpoints do."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from npkit.base.errors import NpkitError

OPERATORS: dict[str, Callable[[object, object], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge,
    "<": operator.lt, ">": operator.gt,
}
_TERM = re.compile(r"\s*([A-Za-z_$][\w$.]*)\s*(==|!=|<=|>=|<|>)\s*(\S+)\s*")


class ConditionError(NpkitError, ValueError):
    """A condition that cannot be read, or cannot be evaluated where the breakpoint fired."""


@dataclass(frozen=True)
class Comparison:
    name: str
    op: str
    value: str


def _number(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


@dataclass(frozen=True)
class Condition:
    """All of `terms` must hold.  Values compare as integers when both sides are numbers
    (`0x40`, `64`), otherwise as text (`packet.IP.dst == 10.1.2.3`, equality only)."""

    text: str
    terms: tuple[Comparison, ...]

    @classmethod
    def parse(cls, text: str) -> Condition:
        parts = re.split(r"\s+and\s+", text.strip())
        terms = []
        for part in parts:
            m = _TERM.fullmatch(part)
            if m is None:
                raise ConditionError(
                    f"condition {text!r}: expected NAME OP VALUE [and ...] with OP one of "
                    f"{' '.join(OPERATORS)}, e.g. 'ttl == 1' or 'packet.IP.dst == 10.1.2.3'")
            terms.append(Comparison(*m.groups()))
        return cls(text.strip(), tuple(terms))

    def holds(self, lookup: Callable[[str], int | str]) -> bool:
        """Whether every comparison holds, `lookup(name)` giving each name's value."""
        for term in self.terms:
            actual = lookup(term.name)
            left = actual if isinstance(actual, int) else _number(str(actual))
            right = _number(term.value)
            if left is not None and right is not None:
                if not OPERATORS[term.op](left, right):
                    return False
                continue
            if term.op not in ("==", "!="):
                raise ConditionError(f"condition {self.text!r}: {term.name} is {actual!r}, "
                                     f"not a number, so only == and != compare it")
            if OPERATORS[term.op](str(actual), term.value) is False:
                return False
        return True
