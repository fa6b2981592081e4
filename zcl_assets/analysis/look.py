"""One look: the analysis of every experiment as of the end of one UTC day."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.analysis.comparisons import build_comparisons


def look_end(as_of: str) -> dt.datetime:
    """End of the look's UTC day (exclusive): data with event time before it is in the look.

    Raises ``ValueError`` for a date that is not ``YYYY-MM-DD``.
    """
    day = dt.date.fromisoformat(as_of)
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)


def take_look(con: duckdb.DuckDBPyConnection, as_of: str) -> pl.DataFrame:
    """Comparisons of every registered experiment as of ``as_of`` (read from the warehouse)."""
    params = {"as_of_end": look_end(as_of)}
    registrations = con.execute(load_sql("select_registrations")).pl()
    plans = con.execute(
        "SELECT experiment_id, planned_n_per_arm, n_fixed_per_arm, plan_reason, allocation_ratio FROM experiment_plans"
    ).pl()
    sessions_stats = con.execute(load_sql("aggregate_arm_statistics"), params).pl()
    snapshots = con.execute(load_sql("select_snapshot_statistics"), params).pl()
    assigned = con.execute(load_sql("count_assigned_units"), params).pl()
    arm_statistics = pl.concat(
        [
            _from_sessions(sessions_stats),
            _from_snapshots(snapshots),
        ],
        how="diagonal_relaxed",
    )
    return build_comparisons(registrations, plans, arm_statistics, assigned)


def _from_sessions(stats: pl.DataFrame) -> pl.DataFrame:
    """Per-arm rows from session data: unit-level moments, or ratio moments for users with several sessions."""
    ratio = (pl.col("randomization_unit") == "user") & (pl.col("n_obs") > pl.col("n_units"))
    return stats.select(
        "experiment_id",
        "arm",
        "metric",
        pl.lit("sessions").alias("source"),
        pl.col("randomization_unit").alias("analysis_unit"),
        pl.col("n_units").alias("n"),
        pl.col("mean"),
        pl.col("variance"),
        pl.when(pl.col("metric") == "success").then(pl.col("sum_y").round().cast(pl.Int64)).alias("successes"),
        *[pl.when(ratio).then(pl.col(c)).alias(c) for c in ("sum_y", "sum_y2", "sum_m", "sum_m2", "sum_ym")],
    )


def _from_snapshots(snapshots: pl.DataFrame) -> pl.DataFrame:
    """Per-arm rows from the last cumulative snapshot (n, mean, variance)."""
    return snapshots.select(
        "experiment_id",
        "arm",
        "metric",
        pl.lit("arm_snapshots").alias("source"),
        pl.lit("snapshot").alias("analysis_unit"),
        "n",
        "mean",
        "variance",
        pl.when(pl.col("metric") == "success").then((pl.col("mean") * pl.col("n")).round().cast(pl.Int64)).alias("successes"),
    )
