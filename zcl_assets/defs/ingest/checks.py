"""Blocking invariants of the staged tables: a failure here is a bug, so data stops.

Each check is evaluated by its staged asset's own step (``check_specs``), on the days of the run
(the partitions materialized): the rows of those days, with their keys looked up in the whole
table, since the properties span days. A check has no step of its own, so a night pays no
Dagster step for it.
"""

from __future__ import annotations

from typing import NamedTuple

import dagster as dg
import duckdb

from contracts.tables import CONTRACTS
from sql import load_sql

CONSERVATION = "row_conservation"
CONSERVATION_DESCRIPTION = (
    "Every raw row of every current landed file (counted when archived) is either staged or "
    "quarantined: raw = staged + quarantined, day by day, for the days of the run."
)


class Invariant(NamedTuple):
    """A property of one staged table that its rows of the run's days must hold (SQL: the violations)."""

    name: str
    sql_name: str
    fields: tuple[str, ...]
    description: str


INVARIANTS: dict[str, tuple[Invariant, ...]] = {
    "assignments": (
        Invariant("unique_session_experiment", "find_staged_duplicate_assignments", ("session_id", "experiment_id", "copies"),
                  "A session is assigned at most once to an experiment: (session_id, experiment_id) is unique."),
        Invariant("arm_in_declared_set", "find_staged_undeclared_arms", ("session_id", "experiment_id", "arm"),
                  "Every staged assignment names a registered experiment and one of its declared arms."),
    ),
    "outcomes": (
        Invariant("assignment_before_outcome", "find_staged_outcomes_before_assignment",
                  ("session_id", "recorded_at", "assigned_at"), "No staged outcome is recorded before its session's assignment."),
    ),
}
"""The invariants of each staged table besides row conservation, which every table has."""


def staged_check_specs(table: str) -> list[dg.AssetCheckSpec]:
    """The blocking checks of ``staged_<table>``: row conservation, then its invariants."""
    asset = dg.AssetKey(CONTRACTS[table].staged_table)
    return [dg.AssetCheckSpec(CONSERVATION, asset=asset, blocking=True, description=CONSERVATION_DESCRIPTION)] + [
        dg.AssetCheckSpec(i.name, asset=asset, blocking=True, description=i.description) for i in INVARIANTS.get(table, ())
    ]


def staged_check_results(con: duckdb.DuckDBPyConnection, table: str, days: list[str]) -> list[dg.AssetCheckResult]:
    """The results of :func:`staged_check_specs` for the landing days ``days``."""
    asset = dg.AssetKey(CONTRACTS[table].staged_table)
    return [_conservation(con, table, days, asset)] + [_invariant(con, i, days, asset) for i in INVARIANTS.get(table, ())]


def _conservation(con: duckdb.DuckDBPyConnection, table: str, days: list[str], asset: dg.AssetKey) -> dg.AssetCheckResult:
    sql = load_sql("count_table_conservation").format(staged=CONTRACTS[table].staged_table)
    broken = con.execute(sql, {"table": table, "days": days}).fetchall()
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=CONSERVATION,
        passed=not broken,
        metadata={
            "days_not_conserved": len(broken),
            "examples": dg.MetadataValue.json(
                [dict(zip(("partition_day", "raw_rows", "staged_rows", "quarantined_rows"), map(str, r))) for r in broken[:10]]
            ),
        },
    )


def _invariant(con: duckdb.DuckDBPyConnection, invariant: Invariant, days: list[str], asset: dg.AssetKey) -> dg.AssetCheckResult:
    rows = con.execute(load_sql(invariant.sql_name), {"days": days}).fetchall()
    return dg.AssetCheckResult(
        asset_key=asset,
        check_name=invariant.name,
        passed=not rows,
        metadata={
            "violations_shown": len(rows),
            "examples": dg.MetadataValue.json([dict(zip(invariant.fields, map(str, r))) for r in rows]),
        },
    )


def checked_days(con: duckdb.DuckDBPyConnection, table: str, days: list[str] | None) -> list[str]:
    """The landing days a run checks: its partitions (``days``), or every landed day of ``table``
    in a run without partitions."""
    if days is None:
        days = [d for (d,) in con.execute("SELECT DISTINCT CAST(partition_day AS VARCHAR) FROM landing_manifest "
                                          "WHERE table_name = ? AND superseded_at IS NULL", [table]).fetchall()]
    return days
