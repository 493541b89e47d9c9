"""Counters as rich tables, for the CLI.

The core's counters are a nested dict whose exact keys grow with the core; these helpers
render any such dict generically: a list or dict of records becomes one table (one row per
record, one column per scalar key), nested lists of records become their own tables, and
rows that are all zero are left out (an idle ME is noise) with a note saying how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

SECTION_ORDER = ("run", "ports", "MEs", "mes", "contexts", "channels", "sram", "dram",
                 "scratch", "units", "rings", "queues")


@dataclass
class Section:
    """One table's worth of records: (row name, {column: scalar})."""

    title: str
    rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hidden: int = 0  # rows left out because every value was zero


def _is_scalar(value: Any) -> bool:
    return isinstance(value, int | float | str | bool) or value is None


def _records(value: Any) -> list[tuple[str, Any]] | None:
    """(name, record) pairs when ``value`` is a list/dict of dict records, else None."""
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return [(str(i), v) for i, v in enumerate(value)]
    if (isinstance(value, Mapping) and value
            and all(isinstance(v, Mapping) for v in value.values())):
        return [(str(k), v) for k, v in value.items()]
    return None


def _all_zero(row: Mapping[str, Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) and v == 0
               for v in row.values())


def sections(counters: Mapping[str, Any], title: str = "", hide_zero: bool = True) -> list[Section]:
    """Flatten a counters dict into tables."""
    out: list[Section] = []
    scalars = {k: v for k, v in counters.items() if _is_scalar(v)}
    if scalars:
        out.append(Section(title or "counters", [("", scalars)]))
    for key in _ordered(k for k in counters if not _is_scalar(counters[k])):
        value = counters[key]
        name = f"{title}.{key}" if title else key
        records = _records(value)
        if records is None:
            if isinstance(value, Mapping):
                out.extend(sections(value, name, hide_zero))
            continue
        out.extend(_record_sections(name, records, hide_zero))
    return out


def _record_sections(name: str, records: list[tuple[str, Any]],
                     hide_zero: bool) -> list[Section]:
    table = Section(name)
    nested: dict[str, list[tuple[str, Any]]] = {}
    for row_name, record in records:
        row = {k: v for k, v in record.items() if _is_scalar(v)}
        for k, v in record.items():
            sub = _records(v)
            if sub is not None:
                nested.setdefault(k, []).extend((f"{row_name}.{n}", r) for n, r in sub)
        if hide_zero and _all_zero(row):
            table.hidden += 1
        else:
            table.rows.append((row_name, row))
    out = [table]
    for key, rows in nested.items():
        out.extend(_record_sections(f"{name}.{key}", rows, hide_zero))
    return out


def _ordered(keys: Iterable[str]) -> list[str]:
    keys = list(keys)
    rank = {k: i for i, k in enumerate(SECTION_ORDER)}
    return sorted(keys, key=lambda k: (rank.get(k, len(rank)), keys.index(k)))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def render(section: Section) -> Table:
    """A table; one with many columns and few rows (ports) is drawn transposed so it fits
    a terminal: one row per counter, one column per record."""
    columns: list[str] = []
    for _, row in section.rows:
        columns.extend(k for k in row if k not in columns)
    caption = f"{section.hidden} all-zero rows not shown" if section.hidden else None
    table = Table(title=section.title, caption=caption, title_justify="left")
    if len(columns) > 6 and len(section.rows) < len(columns):
        table.add_column("", style="bold")
        for name, _ in section.rows:
            table.add_column(name, justify="right")
        for column in columns:
            table.add_row(str(column).replace("_", " "),
                          *[_cell(row.get(column, "")) for _, row in section.rows])
        return table
    named = any(name for name, _ in section.rows)
    if named:
        table.add_column("", style="bold")
    for column in columns:
        table.add_column(str(column).replace("_", " "), justify="right")
    for name, row in section.rows:
        cells = [_cell(row.get(c, "")) for c in columns]
        table.add_row(*([name] if named else []), *cells)
    return table


def for_display(counters: Mapping[str, Any], me_numbers: list[int],
                contexts: bool = False) -> dict[str, Any]:
    """Reshape the chip's counters for people: MEs and contexts labelled by hardware ME
    number, memory channels in one table, only configured rings; unknown sections kept."""
    shown: dict[str, Any] = {}
    rest = dict(counters)
    rest.pop("cycles", None)
    rest.pop("instructions", None)
    run = dict(rest.pop("run", {}))
    fed, out = run.pop("frames_fed", {}), run.pop("frames_out", {})
    if run:
        shown["run"] = run
    if isinstance(rest.get("ports"), list):
        # frames the host fed in / took out, next to the port's own counters
        shown["ports"] = {f"port {i}": {"fed": fed.get(i, 0), **p, "to_sink": out.get(i, 0)}
                          for i, p in enumerate(rest.pop("ports"))}
    if isinstance(rest.get("mes"), list):
        me_rows, ctx_rows = _me_tables(rest.pop("mes"), me_numbers)
        shown["MEs"] = me_rows
        if contexts:
            shown["contexts"] = ctx_rows
    if isinstance(rest.get("channels"), Mapping):
        shown["channels"] = _channel_rows(rest.pop("channels"))
    if isinstance(rest.get("rings"), list):
        shown["rings"] = {f"ring {i}": {k: v for k, v in r.items() if k != "configured"}
                          for i, r in enumerate(rest.pop("rings"))
                          if isinstance(r, Mapping) and r.get("configured", True)}
    shown.update(rest)
    return shown


def _me_name(index: int, me_numbers: list[int]) -> str:
    return f"{me_numbers[index]:#04x}" if index < len(me_numbers) else str(index)


def _me_tables(mes: list[Any], me_numbers: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    me_rows: dict[str, Any] = {}
    ctx_rows: dict[str, Any] = {}
    for i, me in enumerate(mes):
        name = _me_name(i, me_numbers)
        me_rows[name] = {k: v for k, v in me.items() if _is_scalar(v) and k != "number"}
        for c, ctx in enumerate(me.get("contexts", [])):
            ctx_rows[f"{name} ctx {c}"] = dict(ctx)
    # a context that never ran only has inactive cycles: treat it as idle noise
    ctx_rows = {k: v for k, v in ctx_rows.items() if v.get("instructions", 1)}
    return me_rows, ctx_rows


def _channel_rows(channels: Mapping[str, Any]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name, value in channels.items():
        if isinstance(value, list):
            rows.update({f"{name}{i}": v for i, v in enumerate(value)})
        elif isinstance(value, Mapping):
            rows[name] = value
    return rows


def print_counters(console: Console, counters: Mapping[str, Any]) -> None:
    for section in sections(counters):
        if section.rows:
            console.print(render(section))
        elif section.hidden:
            console.print(f"[dim]{section.title}: all {section.hidden} rows zero[/dim]")


def print_leaks(console: Console, reports: list[Any]) -> bool:
    """The leak-check table; True when every freelist is whole."""
    if not reports:
        return True
    table = Table(title="leak check (buffer freelists)", title_justify="left")
    for column in ("freelist", "initial", "now", "missing", "verdict"):
        table.add_column(column, justify="right" if column != "freelist" else "left")
    for r in reports:
        verdict = "[green]ok[/green]" if r.ok else "[red]LEAK[/red]"
        table.add_row(f"sram{r.channel} queue {r.queue}", str(r.initial), str(r.now),
                      str(r.missing), verdict)
    console.print(table)
    return all(r.ok for r in reports)
