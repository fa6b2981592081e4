"""What a run did to the landed rows: per landing table, rows staged, quarantined and excluded.

`zcl run` counts the warehouse before the night and after it and prints the change first, so
a data engineer sees at once how many rows a run staged and how many it rejected, by rule,
without opening the warehouse. Two kinds of rejection are kept apart, as the ``quarantine``
table's ``stage`` column keeps them (``docs/landing.md``):

- **quarantined** (stage ``contract``): the row broke its table's contract and was not staged;
  with the staged rows it makes up every landed row (raw = staged + quarantined). A whole file
  that could not be read (a wrong folder, an unknown format) is one quarantine row naming the
  file;
- **excluded** (stages ``experience`` and ``registration``): a staged row kept out of the
  analysis (a delivered arm that differs from the assignment, a unit seen in two arms, a
  refused registration); it stays staged;
- **files not read** (stage ``landing``): a landed file no load reads (an unknown table folder,
  a day folder that is not a date, an unsupported file type), one row per file; its rows are
  in no other count.

Every rejected row keeps its rule, reason and raw record in the ``quarantine`` table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from contracts.tables import CONTRACTS

WIDTH = 120
"""Widest line of the block, as the report's."""


@dataclass(frozen=True)
class LandedRows:
    """Rows of one landing table in the warehouse: staged, quarantined and excluded, by rule."""

    staged: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    unread_files: dict[str, int] = field(default_factory=dict)


def landed_rows(con: duckdb.DuckDBPyConnection) -> dict[str, LandedRows]:
    """``{table: LandedRows}`` for every landing table of ``contracts.tables.CONTRACTS`` (in staging
    order) as the warehouse holds them now, then any other ``source_table`` of the quarantine (a
    file landed under a folder that is no landing table); tables not created yet count zero."""
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    rejected: dict[str, dict[str, dict[str, int]]] = {}
    if "quarantine" in present:
        for table, stage, rule, n in con.execute(
            "SELECT source_table, stage, rule, count(*) FROM quarantine GROUP BY ALL ORDER BY ALL"
        ).fetchall():
            rejected.setdefault(table, {}).setdefault(stage, {})[rule] = int(n)
    out = {}
    for name in [*CONTRACTS, *sorted(set(rejected) - set(CONTRACTS))]:
        staged = 0
        contract = CONTRACTS.get(name)
        if contract is not None and contract.staged_table in present:
            staged = int(con.execute(f'SELECT count(*) FROM "{contract.staged_table}"').fetchone()[0])
        stages = rejected.get(name, {})
        excluded: dict[str, int] = {}
        for stage, rules in stages.items():
            if stage not in ("contract", "landing"):
                for rule, n in rules.items():
                    excluded[rule] = excluded.get(rule, 0) + n
        out[name] = LandedRows(staged, stages.get("contract", {}), excluded, stages.get("landing", {}))
    return out


def _count(now: int, before: int) -> str:
    change = now - before
    return f"{now:,}" + (f" ({change:+,})" if change else "")


def _rules(now: dict[str, int], before: dict[str, int]) -> list[str]:
    """Every rule with rows now, and every rule that lost its last rows this run, each with its change."""
    return [f"{rule} {_count(now.get(rule, 0), before.get(rule, 0))}" for rule in sorted(set(now) | set(before))
            if now.get(rule, 0) or before.get(rule, 0)]


def _pack(head: str, items: list[str], indent: str = "      ") -> list[str]:
    """``head`` then ``items`` joined by ``, ``, wrapped at :data:`WIDTH` between items, never inside one."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(line) + 1 + len(piece) > WIDTH and line != indent:
            lines.append(line)
            line = indent + piece
        else:
            line = f"{line} {piece}"
    return [*lines, line]


def render_run_changes(before: dict[str, LandedRows], after: dict[str, LandedRows]) -> str:
    """Text block at most :data:`WIDTH` columns wide: per table with any row, the staged,
    quarantined and excluded rows after the run, each with this run's change in parentheses,
    and every rule with rows (or that lost them this run); empty when no table has a row.

    >>> before = {"sessions": LandedRows(10, {"bad_type": 1})}
    >>> after = {"sessions": LandedRows(13, {"bad_type": 1, "missing_field": 2}, {"delivered_arm_mismatch": 1})}
    >>> print(render_run_changes(before, after))
    rows of each landing table after this run (this run's change in parentheses):
      sessions: 13 (+3) staged; 3 (+2) quarantined: bad_type 1, missing_field 2 (+2)
        excluded from the analysis, still staged: 1 (+1): delivered_arm_mismatch 1 (+1)
    every rejected row, with its stage, rule, reason and record: SELECT * FROM quarantine
    """
    lines = []
    for table in [*after, *(t for t in before if t not in after)]:  # a table gone since still shows its loss
        now, was = after.get(table, LandedRows()), before.get(table, LandedRows())
        if not any((now.staged, now.quarantined, now.excluded, now.unread_files,
                    was.staged, was.quarantined, was.excluded, was.unread_files)):
            continue
        quarantined = _count(sum(now.quarantined.values()), sum(was.quarantined.values()))
        rules = _rules(now.quarantined, was.quarantined)
        lines += _pack(f"  {table}: {_count(now.staged, was.staged)} staged; {quarantined} quarantined" + (":" if rules else ""),
                       rules)
        if now.excluded or was.excluded:
            excluded = _count(sum(now.excluded.values()), sum(was.excluded.values()))
            lines += _pack(f"    excluded from the analysis, still staged: {excluded}:", _rules(now.excluded, was.excluded))
        if now.unread_files or was.unread_files:
            unread = _count(sum(now.unread_files.values()), sum(was.unread_files.values()))
            lines += _pack(f"    files not read (their rows are in no count above): {unread}:",
                           _rules(now.unread_files, was.unread_files))
    if not lines:
        return ""
    return "\n".join([
        "rows of each landing table after this run (this run's change in parentheses):",
        *lines,
        "every rejected row, with its stage, rule, reason and record: SELECT * FROM quarantine",
    ])


__all__ = ["WIDTH", "LandedRows", "landed_rows", "render_run_changes"]
