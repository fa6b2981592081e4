"""Blocking invariants of the staged tables: a failure here is a bug, so data stops.

Each check runs for the days of its run (the partitions materialized): the rows of those days,
with their keys looked up in the whole table, since the properties span days.
"""

import dagster as dg

from contracts.tables import CONTRACTS
from resources import Warehouse
from sql import load_sql
from zcl_assets.defs.ingest.partitions import run_days


def _build_conservation_check(table: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=dg.AssetKey(f"staged_{table}"),
        name="row_conservation",
        blocking=True,
        description=(
            "Every raw row of every current landed file (counted when archived) is either staged or "
            "quarantined: raw = staged + quarantined, day by day, for the days of the run."
        ),
    )
    def check(context: dg.AssetCheckExecutionContext, warehouse: Warehouse) -> dg.AssetCheckResult:
        with warehouse.connect() as con:
            sql = load_sql("count_table_conservation").format(staged=CONTRACTS[table].staged_table)
            broken = con.execute(sql, {"table": table, "days": _days(con, table, context)}).fetchall()
        return dg.AssetCheckResult(
            passed=not broken,
            metadata={
                "days_not_conserved": len(broken),
                "examples": dg.MetadataValue.json(
                    [dict(zip(("partition_day", "raw_rows", "staged_rows", "quarantined_rows"), map(str, r))) for r in broken[:10]]
                ),
            },
        )

    return check


def _violations_check(asset: str, name: str, sql_name: str, fields: tuple[str, ...], description: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=dg.AssetKey(asset), name=name, blocking=True, description=description)
    def check(context: dg.AssetCheckExecutionContext, warehouse: Warehouse) -> dg.AssetCheckResult:
        with warehouse.connect() as con:
            rows = con.execute(load_sql(sql_name), {"days": _days(con, asset.removeprefix("staged_"), context)}).fetchall()
        return dg.AssetCheckResult(
            passed=not rows,
            metadata={
                "violations_shown": len(rows),
                "examples": dg.MetadataValue.json([dict(zip(fields, map(str, r))) for r in rows]),
            },
        )

    return check


def _days(con, table: str, context: dg.AssetCheckExecutionContext) -> list[str]:
    """The landing days of the run (its partitions); every landed day of ``table`` in a run
    without partitions."""
    days = run_days(context)
    if days is None:
        days = [d for (d,) in con.execute("SELECT DISTINCT CAST(partition_day AS VARCHAR) FROM landing_manifest "
                                          "WHERE table_name = ? AND superseded_at IS NULL", [table]).fetchall()]
    return days


conservation_checks = [_build_conservation_check(t) for t in CONTRACTS]
staged_invariant_checks = [
    _violations_check(
        "staged_assignments",
        "unique_session_experiment",
        "find_staged_duplicate_assignments",
        ("session_id", "experiment_id", "copies"),
        "A session is assigned at most once to an experiment: (session_id, experiment_id) is unique.",
    ),
    _violations_check(
        "staged_assignments",
        "arm_in_declared_set",
        "find_staged_undeclared_arms",
        ("session_id", "experiment_id", "arm"),
        "Every staged assignment names a registered experiment and one of its declared arms.",
    ),
    _violations_check(
        "staged_outcomes",
        "assignment_before_outcome",
        "find_staged_outcomes_before_assignment",
        ("session_id", "recorded_at", "assigned_at"),
        "No staged outcome is recorded before its session's assignment.",
    ),
]
