"""The look's stored state: per-day sums and counts that a night updates for what changed.

The heavy part of a look is reading the experience table down to a few numbers per arm. Those
numbers are kept per UTC day (``arm_day_sums``: the change of each arm's exact sufficient
statistics on that day; daily counts of first-assigned units, of contract violations, of
control digests and users in a second arm; each experiment's first assignment), so a night
recomputes only the days its changes touch and tonight's figures are running sums over the
stored days (the ``select_*`` SQL that ``look.py`` reads).

What a night recomputes comes from the change log (``zcl_assets.ingest.changelog``): an
experiment is *dirty* from a day on (``from_day``) when an experience row assigned that day
or an aggregate export's snapshot of that day changed, and from its first day when its
registration, its status events or the frames the SQL is given (analysed metrics, strata,
epochs) changed. Its stored rows from that day on are
deleted and computed again by the same SQL a first build runs over every day, and every row
of a day depends only on data of that day and earlier, so a sequence of nights gives the
tables of a fresh build exactly (HUGEINT sums: the order of summation changes nothing).
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.engine import DUCKDB, Engine
from zcl_assets.ingest import changelog
from zcl_assets.ingest.versions import code_fingerprint
from zcl_assets.warehouse import transaction

FIRST_DAY = dt.date(1, 1, 1)
_SUM = "HUGEINT"
STATE_TABLES: dict[str, str] = {
    "arm_day_sums": (
        "experiment_id VARCHAR, arm VARCHAR, metric VARCHAR, segment BIGINT, day DATE, resolution DOUBLE, "
        + ", ".join(f"{c} {_SUM}" for c in ("dn", "dv", "dv2", "dy", "dy2", "dm", "dm2", "dym",
                                              "dx", "dx2", "dxv", "dh", "dhv"))
    ),
    "look_unit_covariates": f"experiment_id VARCHAR, metric VARCHAR, user_id VARCHAR, x {_SUM}",
    "look_assigned_days": "experiment_id VARCHAR, arm VARCHAR, segment BIGINT, day DATE, new_units BIGINT",
    "look_control_digests": "experiment_id VARCHAR, epoch BIGINT, context_digest VARCHAR, day DATE",
    "look_mixed_users": "experiment_id VARCHAR, user_id VARCHAR, day DATE",
    "look_violation_days": "experiment_id VARCHAR, day DATE, bad BIGINT, total BIGINT",
    "look_first_assignments": "experiment_id VARCHAR, epoch BIGINT, first_assigned_at TIMESTAMPTZ",
    "look_state_frames": "experiment_id VARCHAR, digest VARCHAR",
}
"""Every table of the state and its columns."""

FROM_DAY_TABLES: dict[str, str] = {
    "arm_day_sums": "aggregate_arm_day_sums",
    "look_assigned_days": "aggregate_assigned_day_units",
    "look_control_digests": "aggregate_control_digests",
    "look_mixed_users": "aggregate_mixed_users",
}
"""The tables whose rows of a dirty experiment are replaced from its ``from_day`` on, by their SQL."""

FRAMES = ("analysed_metrics", "segment_bounds", "epoch_bounds", "covariate_windows")
"""The registered frames the state's SQL reads (computed by ``look.py`` from the registrations)."""

_EXPERIMENT_LEVEL = ("staged_experiments", "staged_experiment_events", "experiment_plans")
"""The changes that make an experiment dirty from its first day: its registration, its events, its plan
(planned again with its family after a registration of the family was corrected or removed)."""
_FROM_DAY_SOURCES = ("experience", "staged_arm_snapshots")
"""The changes that make an experiment dirty from their day on: an experience row (assigned that day) and
an aggregate export's snapshot (its time falls on its landing day, the contract's ``wrong_partition``)."""
_DAY_SOURCES = ("staged_assignments", "staged_outcomes", "staged_arm_snapshots", "staged_sessions", "experience")
AGGREGATES: tuple[str, ...] = (*FROM_DAY_TABLES.values(), "aggregate_first_assignments", "aggregate_violation_days",
                                "aggregate_unit_covariates")
"""The SQL that builds the state from the experience and staged tables (the heavy part of a look)."""
_SQL = AGGREGATES


def ensure_state(con: duckdb.DuckDBPyConnection, temp: bool = False) -> None:
    """Create the state's tables that are missing, and again those stored with other columns (an
    older version's: the state is derived, and a change of its SQL rebuilds it in full); with
    ``temp``, empty temp tables of the same names, which hide the stored ones on this connection
    (a fresh build beside the stored one)."""
    for table, columns in STATE_TABLES.items():
        if temp:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} ({columns})")
            continue
        stored = [r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND table_schema = 'main' "
            "ORDER BY ordinal_position", [table]).fetchall()]
        wanted = [c.strip().split(" ")[0] for c in columns.split(",")]
        if stored and stored != wanted:
            con.execute(f"DROP TABLE {table}")
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")


class StateUpdate(NamedTuple):
    """What :func:`update_look_state` applied: the dirty experiments ``experiment_id, from_day``
    (empty when nothing changed) and the change-log position they were read up to."""

    dirty: pl.DataFrame
    fingerprint: str
    changes: changelog.Changes
    fresh: bool

    def commit(self, con: duckdb.DuckDBPyConnection) -> None:
        """Move the state's cursor past the changes, inside the transaction that writes the looks
        they change: a run killed before that write reads the same changes again (the state's
        rows are replaced from each dirty day, so applying them twice gives the same rows),
        and no look is left unwritten. Nothing for a ``fresh`` build."""
        if not self.fresh:
            changelog.advance(con, "look_state", self.fingerprint, self.changes)


def update_look_state(con: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame], fresh: bool = False,
                      engine: Engine = DUCKDB) -> StateUpdate:
    """Bring the stored state up to date with the changes since the state's cursor; the cursor
    itself moves with the looks written from them (:meth:`StateUpdate.commit`).

    Args:
        con: an open connection (write, unless ``fresh``).
        frames: the frames of ``FRAMES`` as the look computes them now.
        fresh: build the whole state from scratch in temp tables of this connection (which then
            hide the stored state from its reads), leaving the stored state and the change log
            as they are; works on a read-only connection.
        engine: where the SQL of ``AGGREGATES`` runs (``zcl_assets.engine``); the sums land in
            the warehouse's state tables either way.

    Returns:
        :class:`StateUpdate`, whose ``commit`` the caller runs in the transaction of its writes.
    """
    fingerprint = code_fingerprint(*(load_sql(n) for n in _SQL))
    if fresh:
        ensure_state(con, temp=True)
        changes = changelog.Changes(True, 0, "")
    else:
        ensure_state(con)
        changes = changelog.changes_since(con, "look_state", fingerprint)
    digests = _frame_digests(frames)
    dirty, days, experiments = _dirty(con, changes, digests, frames["covariate_windows"])
    if not (dirty.is_empty() and days.is_empty()):
        keys = quarantined_keys(con, None if changes.full or experiments.height else days)
        from_day = dirty.get_column("from_day").min() if dirty.height else FIRST_DAY
        with transaction(con, dirty=dirty, dirty_days=days, dirty_experiments=experiments, quarantined_keys=keys,
                         frame_digests=digests, **frames):
            _apply(con, changes.full, dt.datetime.combine(from_day, dt.time(), tzinfo=dt.timezone.utc), engine)
    return StateUpdate(dirty, fingerprint, changes, fresh)


def _apply(con: duckdb.DuckDBPyConnection, full: bool, from_at: dt.datetime, engine: Engine) -> None:
    """Replace the rows of the dirty experiments, days and frames (registered) in every table."""
    if full:
        for table in STATE_TABLES:
            con.execute(f"DELETE FROM {table}")
    params = {"from_at": from_at}
    _replace_first_assignments(con, params, engine)
    _replace_covariates(con, engine)
    _replace_from_day(con, params, engine)
    con.execute("DELETE FROM look_violation_days WHERE day IN (SELECT day FROM dirty_days) "
                "OR experiment_id IN (SELECT experiment_id FROM dirty_experiments)")
    engine.execute(con, f"INSERT INTO look_violation_days BY NAME {load_sql('aggregate_violation_days')}")
    con.execute("DELETE FROM look_state_frames")
    con.execute("INSERT INTO look_state_frames SELECT experiment_id, digest FROM frame_digests")


def quarantined_keys(con: duckdb.DuckDBPyConnection, days: pl.DataFrame | None) -> pl.DataFrame:
    """The keys read from the quarantined records that may belong to an experiment, of the
    landing days ``days`` (every day when None); a malformed record (not JSON) has none."""
    con.register("key_days", days if days is not None else pl.DataFrame(schema={"day": pl.Date}))
    try:
        records = con.execute(f"SELECT * FROM ({load_sql('select_quarantined_records')}) "
                              "WHERE $all OR partition_day IN (SELECT day FROM key_days)", {"all": days is None}).pl()
    finally:
        con.unregister("key_days")
    return records.select(
        "source_table", "stage", "partition_day",
        *[pl.col("record").str.json_path_match(f"$.{k}").alias(k) for k in ("experiment_id", "session_id", "metric")],
    )


def _replace_from_day(con: duckdb.DuckDBPyConnection, params: dict, engine: Engine) -> None:
    for table, sql in FROM_DAY_TABLES.items():
        con.execute(f"DELETE FROM {table} t USING dirty d WHERE t.experiment_id = d.experiment_id AND t.day >= d.from_day")
        engine.execute(con, f"INSERT INTO {table} BY NAME {load_sql(sql)}", params)


def _replace_first_assignments(con: duckdb.DuckDBPyConnection, params: dict, engine: Engine) -> None:
    engine.execute(con, f"CREATE OR REPLACE TEMP TABLE first_assignments AS {load_sql('aggregate_first_assignments')}", params)
    con.execute("DELETE FROM look_first_assignments WHERE experiment_id IN (SELECT experiment_id FROM dirty)")
    con.execute("INSERT INTO look_first_assignments BY NAME SELECT * FROM first_assignments")


def _replace_covariates(con: duckdb.DuckDBPyConnection, engine: Engine) -> None:
    """Rebuild the CUPED covariates of the dirty experiments whose first assignment may have
    moved (dirty on or before its day, or none yet): a covariate depends only on what was known
    before the first assignment, so a later change leaves it as it is (a change of that history
    makes its experiment dirty from the first day, :func:`_dirty`)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE covariate_rebuild AS SELECT d.experiment_id FROM dirty d "
        "LEFT JOIN look_first_assignments f ON f.experiment_id = d.experiment_id AND f.epoch = 0 "
        "WHERE f.first_assigned_at IS NULL OR d.from_day <= CAST(f.first_assigned_at AS DATE)")
    con.execute("DELETE FROM look_unit_covariates WHERE experiment_id IN (SELECT experiment_id FROM covariate_rebuild)")
    con.execute("CREATE OR REPLACE TEMP TABLE covariate_targets AS SELECT * FROM covariate_windows "
                "WHERE experiment_id IN (SELECT experiment_id FROM covariate_rebuild)")
    engine.execute(con, f"INSERT INTO look_unit_covariates BY NAME {load_sql('aggregate_unit_covariates')}")


def _frame_digests(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Per experiment, a digest of its rows in every frame (an experiment absent from all has none)."""
    parts = []
    for name in FRAMES:
        frame = frames[name]
        if frame.height:
            parts.append(frame.select("experiment_id", pl.concat_str(
                [pl.lit(name), *[pl.col(c).cast(pl.String).fill_null("") for c in frame.columns]], separator="\x1f"
            ).alias("row")))
    if not parts:
        return pl.DataFrame(schema={"experiment_id": pl.String, "digest": pl.String})
    return pl.concat(parts).group_by("experiment_id").agg(
        pl.col("row").sort().str.join("\x1e").alias("digest")).sort("experiment_id")


def _dirty(con: duckdb.DuckDBPyConnection, changes: changelog.Changes, digests: pl.DataFrame, cuped: pl.DataFrame):
    """(dirty experiments with their from_day, dirty landing days, experiments dirty from their first day).

    An experiment of ``cuped`` (``experiment_id``: its plan applies CUPED) is dirty from its first
    day when a session or an outcome of a day up to its first assignment changed: its units'
    covariates may have moved."""
    registered = con.execute("SELECT experiment_id FROM staged_experiments").pl()
    if changes.full:
        everything = registered.with_columns(pl.lit(FIRST_DAY).alias("from_day"))
        days = con.execute("SELECT DISTINCT partition_day AS day FROM landing_manifest WHERE superseded_at IS NULL").pl()
        return everything, days, registered
    stored = con.execute("SELECT experiment_id, digest FROM look_state_frames").pl()
    moved = digests.join(stored, on=["experiment_id", "digest"], how="anti").select("experiment_id")
    moved = pl.concat([moved, stored.join(digests, on="experiment_id", how="anti").select("experiment_id")])
    level = con.execute(
        f"SELECT DISTINCT experiment_id FROM {changes.relation} WHERE experiment_id IS NOT NULL "
        f"AND list_contains($sources, source)", {"sources": list(_EXPERIMENT_LEVEL)}).pl()
    history = con.execute(
        f"SELECT f.experiment_id FROM look_first_assignments f WHERE f.epoch = 0 AND CAST(f.first_assigned_at AS DATE) >= "
        f"(SELECT min(day) FROM {changes.relation} WHERE list_contains($sources, source))",
        {"sources": ["staged_sessions", "staged_outcomes"]}).pl().join(cuped.select("experiment_id"), on="experiment_id")
    whole = pl.concat([moved, level, history]).unique()
    rows = con.execute(
        f"SELECT experiment_id, min(coalesce(day, $first)) AS from_day FROM {changes.relation} "
        "WHERE list_contains($sources, source) AND experiment_id IS NOT NULL GROUP BY ALL",
        {"first": FIRST_DAY, "sources": list(_FROM_DAY_SOURCES)}).pl()
    dirty = pl.concat([rows, whole.with_columns(pl.lit(FIRST_DAY).alias("from_day"))], how="vertical_relaxed") \
        .group_by("experiment_id").agg(pl.col("from_day").min()).sort("experiment_id")
    days = con.execute(
        f"SELECT day FROM {changes.relation} WHERE day IS NOT NULL AND list_contains($sources, source) "
        f"UNION SELECT o.partition_day FROM staged_outcomes o WHERE o.session_id IN ("
        f"SELECT session_id FROM {changes.relation} WHERE source = 'staged_sessions' AND session_id IS NOT NULL)",
        {"sources": list(_DAY_SOURCES)}).pl()
    return dirty.with_columns(pl.col("from_day").cast(pl.Date)), days.select(pl.col("day").cast(pl.Date)), whole


def read_state(con: duckdb.DuckDBPyConnection, as_of_end: dt.datetime, epoch_bounds: pl.DataFrame) -> list[pl.DataFrame]:
    """The look's aggregates as of ``as_of_end`` from the stored state, in ``look.AGGREGATES`` order."""
    params = {"as_of_end": as_of_end}
    con.register("epoch_bounds", epoch_bounds)
    try:
        return [con.execute(load_sql(name), params).pl() for name in READS]
    finally:
        con.unregister("epoch_bounds")


READS: tuple[str, ...] = (
    "select_arm_statistics", "select_assigned_units", "select_contract_violations", "select_control_drift",
    "select_users_in_both_arms", "select_first_assignments",
)
"""The reads of one look from the state, in the order :func:`read_state` returns them."""


def full_build_inputs(con: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame]) -> tuple[dict, dict[str, pl.DataFrame]]:
    """What the SQL of ``AGGREGATES`` and ``READS`` is given for a build of the whole state: its
    parameters and the frames it reads besides the warehouse's tables, so that another engine
    can run the same SQL (``zcl_assets/portability/spark.py``)."""
    dirty, days, experiments = _dirty(con, changelog.Changes(True, 0, ""), _frame_digests(frames),
                                      frames["covariate_windows"])
    registered = {"dirty": dirty, "dirty_days": days, "dirty_experiments": experiments,
                  "covariate_targets": frames["covariate_windows"],
                  "quarantined_keys": quarantined_keys(con, None), **frames}
    params = {"from_at": dt.datetime.combine(FIRST_DAY, dt.time(), tzinfo=dt.timezone.utc)}
    return params, registered
