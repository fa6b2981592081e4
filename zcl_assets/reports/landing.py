"""What a run did to the landed rows: staged and quarantined rows per landing table, before and after.

`zcl run` counts the warehouse before the night and after it and prints the change first,
so a data engineer sees at once how many rows a run staged and how many it quarantined, by
rule, without opening the warehouse. Every quarantined row keeps its rule, reason and raw
record in the ``quarantine`` table (``docs/landing.md``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import duckdb

from contracts.tables import CONTRACTS


@dataclass(frozen=True)
class LandedRows:
    """Rows of one landing table in the warehouse: staged, and quarantined by rule."""

    staged: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)

    @property
    def quarantined_total(self) -> int:
        return sum(self.quarantined.values())


def landed_rows(con: duckdb.DuckDBPyConnection) -> dict[str, LandedRows]:
    """``{landing table: LandedRows}`` for every landing table of ``contracts.tables.CONTRACTS``
    (in staging order) as the warehouse holds them now; tables not created yet count zero.

    The quarantined rows are those of every stage (contract rules and the nightly experience
    rules) whose ``source_table`` is the landing table.
    """
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    quarantined: dict[str, dict[str, int]] = {}
    if "quarantine" in present:
        for table, rule, n in con.execute("SELECT source_table, rule, count(*) FROM quarantine GROUP BY ALL ORDER BY ALL").fetchall():
            quarantined.setdefault(table, {})[rule] = int(n)
    out = {}
    for name, contract in CONTRACTS.items():
        staged = 0
        if contract.staged_table in present:
            staged = int(con.execute(f'SELECT count(*) FROM "{contract.staged_table}"').fetchone()[0])
        out[name] = LandedRows(staged, quarantined.pop(name, {}))
    for name, rules in quarantined.items():  # a source table that is not a landing table (none today)
        out[name] = LandedRows(0, rules)
    return out


def _count(now: int, before: int) -> str:
    change = now - before
    return f"{now:,}" + (f" ({change:+,})" if change else "")


def render_run_changes(before: dict[str, LandedRows], after: dict[str, LandedRows]) -> str:
    """Text block at most 120 columns wide: per landing table with any row, staged and quarantined rows after the run,
    each with its change since ``before`` in parentheses, and the quarantine rules that
    changed (or all of a table's rules when none changed); empty when no table has a row.

    >>> before = {"sessions": LandedRows(10, {"bad_type": 1})}
    >>> after = {"sessions": LandedRows(13, {"bad_type": 1, "missing_field": 2})}
    >>> print(render_run_changes(before, after))
    rows of each landing table after this run (the change this run made in parentheses):
      sessions: 13 (+3) staged, 3 (+2) quarantined: missing_field 2 (+2)
    every quarantined row, with its rule, reason and record: SELECT * FROM quarantine
    """
    lines = []
    for table, now in after.items():
        was = before.get(table, LandedRows())
        if not (now.staged or now.quarantined_total or was.staged or was.quarantined_total):
            continue
        changed = {r: n for r, n in now.quarantined.items() if n != was.quarantined.get(r, 0)}
        changed |= {r: 0 for r in was.quarantined if r not in now.quarantined}
        rules = changed or now.quarantined
        detail = ", ".join(f"{r} {_count(n, was.quarantined.get(r, 0))}" for r, n in sorted(rules.items()))
        line = (f"  {table}: {_count(now.staged, was.staged)} staged, "
                f"{_count(now.quarantined_total, was.quarantined_total)} quarantined" + (f": {detail}" if detail else ""))
        lines.append(textwrap.fill(line, width=120, initial_indent="", subsequent_indent="      ", drop_whitespace=False)
                     if len(line) > 120 else line)
    if not lines:
        return ""
    return "\n".join([
        "rows of each landing table after this run (the change this run made in parentheses):",
        *lines,
        "every quarantined row, with its rule, reason and record: SELECT * FROM quarantine",
    ])


__all__ = ["LandedRows", "landed_rows", "render_run_changes"]
