"""Read one pass of looks from the warehouse: SQL to the frames of ``engine.LookInputs``.

Heavy work stays in DuckDB (``sql/aggregate_unit_statistics.sql`` and friends): joins and
exact aggregation to cumulative sufficient statistics per experiment, arm, stratum and
day. Python receives those few numbers and runs ``engine.analyse`` over every experiment
and night at once.

Nights: every experiment is looked at on every UTC day on which its data changed, on its
registration day and on the night asked for. Every night is recomputed from the staged data
at every run and replaces the stored one: the looks are derived data, so a corrected landed
file gives the same looks as a fresh load, nights the schedule missed are caught up, and a
first run writes the whole history in one pass. Rule 1 (sticky) runs along the path.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import NamedTuple

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.analysis.design import comparisons
from zcl_assets.analysis.engine import COVARIATE_COLUMNS, STAT_COLUMNS, LookInputs, analyse
from zcl_assets.analysis.look_state import StateUpdate, read_state, update_look_state
from zcl_assets.analysis.metrics import CATALOGUE, metric_spec
from zcl_assets.analysis.registration import allocation_changes, decode_arms
from zcl_assets.engine import DUCKDB, Engine
from zcl_assets.stats.decision import STALLED_AFTER_DAYS

UTC = dt.timezone.utc
TS = pl.Datetime("us", "UTC")


def look_end(as_of: str) -> dt.datetime:
    """End of the look's UTC day (exclusive): data with event time before it is in the look.

    Raises ``ValueError`` for a date that is not ``YYYY-MM-DD``.
    """
    day = dt.date.fromisoformat(as_of)
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=UTC)


def strata(events: pl.DataFrame, changes: pl.DataFrame, arms: pl.DataFrame):
    """Strata and epochs from the status stream and the valid declared allocation changes.

    A stratum starts at registration, at every declared allocation change and at every
    ``reopened`` event; an epoch starts at registration and at every ``reopened`` event.

    Returns:
        ``(segments, shares, segment_bounds, epoch_bounds)``: ``segments`` maps
        ``experiment_id, segment`` to ``epoch``; ``shares`` gives each stratum's declared
        share per arm (the registration's, then each change's; a reopen keeps the last);
        the bounds frames (``starts_at``) are what the SQL joins on.
    """
    reopen = events.filter(pl.col("status") == "reopened").select("experiment_id", "at").unique()
    change_times = changes.select("experiment_id", "at").unique()
    bounds = (
        pl.concat([reopen.with_columns(pl.lit(True).alias("reopen")),
                   change_times.with_columns(pl.lit(False).alias("reopen"))])
        .group_by("experiment_id", "at").agg(pl.col("reopen").any())
        .sort("experiment_id", "at")
        .with_columns(
            (pl.int_range(pl.len()).over("experiment_id") + 1).alias("segment"),
            pl.col("reopen").cast(pl.Int64).cum_sum().over("experiment_id").alias("epoch"),
        )
    )
    experiments = arms.select("experiment_id").unique()
    segments = pl.concat([
        experiments.with_columns(pl.lit(0, dtype=pl.Int64).alias("segment"), pl.lit(0, dtype=pl.Int64).alias("epoch")),
        bounds.select("experiment_id", pl.col("segment").cast(pl.Int64), pl.col("epoch").cast(pl.Int64)),
    ])
    # shares: the registration's for stratum 0; a change's from its stratum on
    first = arms.select("experiment_id", "arm", "share").with_columns(pl.lit(0, dtype=pl.Int64).alias("segment"))
    changed = changes.join(bounds.select("experiment_id", "at", "segment"), on=["experiment_id", "at"]) \
        .select("experiment_id", "arm", "share", pl.col("segment").cast(pl.Int64))
    grid = segments.join(arms.select("experiment_id", "arm"), on="experiment_id")
    known = pl.concat([first, changed]).sort("segment")
    shares = grid.sort("segment").join_asof(known, on="segment", by=["experiment_id", "arm"], strategy="backward",
                                            check_sortedness=False).select("experiment_id", "segment", "arm", "share")
    seg_bounds = bounds.select("experiment_id", pl.col("segment").cast(pl.Int64), pl.col("at").alias("starts_at"))
    epoch_bounds = bounds.filter("reopen").select("experiment_id", pl.col("epoch").cast(pl.Int64), pl.col("at").alias("starts_at"))
    return segments, shares, seg_bounds, epoch_bounds


CLOSED = ("completed", "cancelled")
"""Statuses after which the last look stands: no further looks until a ``reopened`` event."""


def new_unit_days(assigned: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, epoch, day``: the days on which units were first assigned in each epoch,
    from the cumulative ``assigned`` frame (``engine.LookInputs.assigned``) and the strata."""
    grown = assigned.sort("day").with_columns(
        (pl.col("units") - pl.col("units").shift(1).over("experiment_id", "arm", "segment").fill_null(0)).alias("new"))
    return grown.filter(pl.col("new") > 0).join(segments, on=["experiment_id", "segment"]).select(
        "experiment_id", "epoch", pl.col("day").cast(pl.Date)).unique().sort("experiment_id", "epoch", "day")


def _calendar(reg: pl.DataFrame, day: dt.date, data_days: pl.DataFrame | None, unit_days: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, as_of, tonight_only``: every day from registration (``data_days`` None),
    or its data days, its registration day, the night each spell without new units reached
    :data:`~zcl_assets.stats.decision.STALLED_AFTER_DAYS` days, and tonight."""
    if data_days is None:
        return reg.with_columns(pl.date_ranges("start", pl.lit(day)).alias("as_of")).explode("as_of").select(
            "experiment_id", "as_of", pl.lit(False).alias("tonight_only"))
    units = unit_days.sort("day").with_columns(pl.col("day").shift(-1).over("experiment_id", "epoch").alias("next"))
    stall = units.with_columns((pl.col("day") + pl.duration(days=STALLED_AFTER_DAYS)).alias("as_of")).filter(
        pl.col("next").is_null() | (pl.col("next") > pl.col("as_of"))).select("experiment_id", "as_of")
    seen = pl.concat([reg.select("experiment_id", pl.col("start").alias("as_of")), stall.select("experiment_id", "as_of"),
                      data_days.select("experiment_id", pl.col("day").cast(pl.Date).alias("as_of"))])
    days = pl.concat([seen.with_columns(pl.lit(False).alias("tonight_only")),
                      reg.select("experiment_id", pl.lit(day).alias("as_of"), pl.lit(True).alias("tonight_only"))])
    days = days.join(reg, on="experiment_id").filter((pl.col("as_of") >= pl.col("start")) & (pl.col("as_of") <= day))
    return days.group_by("experiment_id", "as_of").agg(pl.col("tonight_only").all())


def nights(
    registrations: pl.DataFrame, events: pl.DataFrame, first: pl.DataFrame, as_of: str,
    data_days: pl.DataFrame | None = None, unit_days: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The nights each experiment is looked at, up to ``as_of``.

    Every UTC day from its registration day to ``as_of`` (``data_days`` None), or, given
    ``data_days`` (``experiment_id, day``: days on which any of its data changed), those
    days, its registration day, the night a spell without new units (``unit_days``, from
    :func:`new_unit_days`) reaches :data:`~zcl_assets.stats.decision.STALLED_AFTER_DAYS`
    days, and ``as_of`` unless the experiment is stalled then: a night without new data
    changes nothing but its date, so an export from years ago is looked at on the nights it
    had data (and the night it stalled), not on every day since. After a ``completed`` or
    ``cancelled`` event the night of the event is the last look: none follows until a
    ``reopened`` event.

    Columns: ``experiment_id, as_of, days_since_first_assignment, status, epoch, epoch_start,
    last_unit_day``. The status is the last event before the night's end (``registered`` when
    none), the epoch the number of ``reopened`` events before it; ``epoch_start`` is the
    registration time, or the epoch's ``reopened`` event; the days count from the epoch's first
    assignment (``first``: ``experiment_id, first_assigned_at`` and optionally ``epoch``; without
    an epoch column the rows are epoch 0's); ``last_unit_day`` is the last day on or before the
    night on which a unit was first assigned in the epoch (null: none).
    """
    day = dt.date.fromisoformat(as_of)
    reg = registrations.select("experiment_id", pl.col("registered_at").cast(TS).alias("registered_at"),
                               pl.col("registered_at").dt.date().alias("start")).filter(pl.col("start") <= day)
    unit_days = unit_days if unit_days is not None else pl.DataFrame(
        schema={"experiment_id": pl.String, "epoch": pl.Int64, "day": pl.Date})
    grid = _calendar(reg, day, data_days, unit_days)
    grid = grid.with_columns((pl.col("as_of").cast(pl.Datetime("us")).dt.replace_time_zone("UTC") + pl.duration(days=1))
                             .alias("look_end"))
    ev = events.select("experiment_id", "status", pl.col("at").cast(TS)).sort("at")
    grid = grid.sort("look_end").join_asof(ev.rename({"at": "event_at"}), left_on="look_end", right_on="event_at",
                                           by="experiment_id", strategy="backward", allow_exact_matches=False,
                                           check_sortedness=False)
    reopens = ev.filter(pl.col("status") == "reopened").with_columns(
        pl.int_range(1, pl.len() + 1).over("experiment_id").alias("epoch")).select("experiment_id", "at", "epoch")
    grid = grid.sort("look_end").join_asof(reopens, left_on="look_end", right_on="at", by="experiment_id",
                                           strategy="backward", allow_exact_matches=False, check_sortedness=False)
    grid = grid.join(reg.select("experiment_id", "registered_at"), on="experiment_id").with_columns(
        pl.col("epoch").fill_null(0).cast(pl.Int64), pl.coalesce("at", "registered_at").alias("epoch_start"))
    firsts = first.select("experiment_id", pl.col("epoch").cast(pl.Int64) if "epoch" in first.columns
                          else pl.lit(0, dtype=pl.Int64).alias("epoch"), pl.col("first_assigned_at").cast(TS))
    grid = grid.join(firsts, on=["experiment_id", "epoch"], how="left")
    grid = grid.sort("as_of").join_asof(unit_days.select("experiment_id", "epoch", pl.col("day").alias("last_unit_day"))
                                        .sort("last_unit_day"), left_on="as_of", right_on="last_unit_day",
                                        by=["experiment_id", "epoch"], strategy="backward", check_sortedness=False)
    stalled = (pl.col("as_of") - pl.col("last_unit_day")).dt.total_days() >= STALLED_AFTER_DAYS
    closed = pl.col("status").is_in(CLOSED)
    grid = grid.sort("experiment_id", "as_of").filter(
        ~(pl.col("tonight_only") & stalled.fill_null(False))
        & ~(closed & closed.shift(1).over("experiment_id").fill_null(False)))
    return grid.select(
        "experiment_id", "as_of",
        pl.when(pl.col("first_assigned_at") < pl.col("look_end"))
        .then((pl.col("look_end") - pl.col("first_assigned_at")).dt.total_seconds() / 86400.0)
        .alias("days_since_first_assignment"),
        pl.col("status").fill_null("registered"), "epoch", pl.col("epoch_start").dt.date(), "last_unit_day",
    ).sort("experiment_id", "as_of")


@dataclass(frozen=True)
class _Prepared:
    params: dict
    frames: dict[str, pl.DataFrame]
    registrations: pl.DataFrame
    events: pl.DataFrame
    arms: pl.DataFrame
    segments: pl.DataFrame
    shares: pl.DataFrame
    snapshots: pl.DataFrame
    comparisons: pl.DataFrame
    experiments: pl.DataFrame


def _prepare(con: duckdb.DuckDBPyConnection, as_of: str) -> _Prepared:
    """The registrations, calendar and comparisons of a pass, and what its SQL aggregates are given."""
    params = {"as_of_end": look_end(as_of)}
    registrations = con.execute(load_sql("select_registrations")).pl()
    plans = con.execute("SELECT * FROM experiment_plans").pl()
    events = con.execute(load_sql("select_experiment_events")).pl().with_columns(pl.col("at").cast(TS))
    arms = decode_arms(registrations)
    changes, _ = allocation_changes(events, arms, registrations.with_columns(pl.col("registered_at").cast(TS)))
    segments, shares, seg_bounds, epoch_bounds = strata(events, changes, arms)
    snapshots = con.execute(load_sql("select_snapshot_statistics"), params).pl()
    snapshot_metrics = snapshots.select("experiment_id", "metric").unique()
    comps, experiments, _ = comparisons(registrations, plans, snapshot_metrics, changes)
    metrics = comps.select("experiment_id", "metric").unique()
    analysed = metrics.with_columns(pl.col("metric").replace_strict(
        {m: spec.resolution for m, spec in CATALOGUE.items()}, default=metric_spec("").resolution,
        return_dtype=pl.Float64).alias("resolution"))
    windows = plans.filter(pl.col("cuped").fill_null(False)).select(
        "experiment_id", pl.col("covariate_window_days").cast(pl.Int64).alias("window_days"))
    frames = {"analysed_metrics": analysed, "segment_bounds": seg_bounds, "epoch_bounds": epoch_bounds,
              "covariate_windows": windows}
    return _Prepared(params, frames, registrations, events, arms, segments, shares, snapshots, comps, experiments)


def state_frames(con: duckdb.DuckDBPyConnection, as_of: str) -> dict[str, pl.DataFrame]:
    """The frames the look's stored state is built from (``look_state.FRAMES``), as of ``as_of``."""
    return _prepare(con, as_of).frames


def read_inputs(con: duckdb.DuckDBPyConnection, as_of: str) -> LookInputs:
    """The frames of one pass of looks as of ``as_of`` (see the module docstring), read from
    the look's stored state (bring it up to date first: ``look_state.update_look_state``).

    Args:
        con: an open warehouse connection.
        as_of: the night asked for (``YYYY-MM-DD``).
    """
    prepared = _prepare(con, as_of)
    registrations, events, arms = prepared.registrations, prepared.events, prepared.arms
    segments, shares, snapshots, comps, experiments = (prepared.segments, prepared.shares, prepared.snapshots,
                                                       prepared.comparisons, prepared.experiments)
    unit_stats, assigned, violations, drift, both, first = read_state(con, prepared.params["as_of_end"],
                                                                      prepared.frames["epoch_bounds"])
    binary = pl.col("metric").replace_strict({m: spec.binary for m, spec in CATALOGUE.items()}, default=False,
                                             return_dtype=pl.Boolean)
    snap_stats = snapshots.with_columns(binary.alias("binary")).select(
        "experiment_id", "metric", "arm", pl.lit(0, dtype=pl.Int64).alias("segment"), "day",
        pl.col("n").cast(pl.Int64), (pl.col("mean") * pl.col("n")).alias("sum_v"),
        pl.lit(None, dtype=pl.Float64).alias("m2_v"), pl.col("variance").cast(pl.Float64),
        pl.when("binary").then((pl.col("mean") * pl.col("n")).round()).alias("successes"),
        pl.col("n").cast(pl.Float64).alias("observations"),
        *[pl.lit(None, dtype=pl.Float64).alias(c) for c in ("sum_y", "sum_m", "c_yy", "c_mm", "c_ym")],
        *[pl.lit(0.0).alias(c) for c in COVARIATE_COLUMNS],  # an export has no covariate
    )
    arm_stats = pl.concat([unit_stats.select(["experiment_id", "metric", "arm", "segment", "day", *STAT_COLUMNS,
                                              *COVARIATE_COLUMNS]),
                           snap_stats], how="vertical_relaxed")
    primary = experiments.filter(pl.col("source") == "arm_snapshots").select("experiment_id", pl.col("primary_metric").alias("metric"))
    snap_units = snapshots.join(primary, on=["experiment_id", "metric"]).select(
        "experiment_id", "arm", pl.lit(0, dtype=pl.Int64).alias("segment"), "day", pl.col("n").cast(pl.Int64).alias("units"))
    assigned = pl.concat([assigned.with_columns(pl.col("units").cast(pl.Int64), pl.col("segment").cast(pl.Int64)),
                          snap_units], how="vertical_relaxed")
    data_days = pl.concat([
        arm_stats.select("experiment_id", "day"), assigned.select("experiment_id", "day"),
        violations.select("experiment_id", "day"),
        events.select("experiment_id", pl.col("at").dt.date().alias("day")),
    ])
    looks = nights(registrations.with_columns(pl.col("registered_at").cast(TS)), events, first, as_of, data_days,
                   new_unit_days(assigned, segments))
    looks = looks.with_columns(pl.lit(True).alias("output"))  # every night is computed (take_looks chooses)
    return LookInputs(
        comparisons=comps, looks=looks, arm_stats=arm_stats, assigned=assigned,
        segments=segments, shares=shares, arms=arms.select("experiment_id", "arm", "arm_order"), experiments=experiments,
        violations=violations.with_columns(pl.col("epoch").cast(pl.Int64)),
        drift=drift.with_columns(pl.col("epoch").cast(pl.Int64)),
        both_arms=both.with_columns(pl.col("users").cast(pl.Int64)),
    )


class Pass(NamedTuple):
    """One pass of the look (:func:`take_looks`)."""

    look: pl.DataFrame
    """The rows of the nights written (``written``)."""
    nights: pl.DataFrame
    """``experiment_id, as_of`` of every night of the pass that has rows: the nights that exist now."""
    written: pl.DataFrame
    """``experiment_id, as_of`` of the nights the pass writes (:func:`nights_to_write`)."""
    update: StateUpdate
    """The state's update: the caller writes ``look`` and runs ``update.commit`` in one transaction, so a
    run killed between the two loses no change."""


def take_looks(con: duckdb.DuckDBPyConnection, as_of: str, engine: Engine = DUCKDB, everything: bool = False) -> Pass:
    """Every night of every experiment up to ``as_of``, from the state brought up to date by
    ``engine``; the rows of the nights to write alone are put in words and returned (``everything``:
    every night, e.g. for a table just recreated). Every night is computed whatever is written
    (``engine.analyse``), so the rows written are those a pass writing every night would give."""
    update = update_look_state(con, state_frames(con, as_of), engine=engine)
    inputs = read_inputs(con, as_of)
    keys = ["experiment_id", "as_of"]
    nights = inputs.looks.join(inputs.comparisons.select("experiment_id").unique(), on="experiment_id",
                               how="semi").select(keys).unique()  # a night has rows if its experiment compares
    written = nights_to_write(nights, update.dirty, as_of, everything=everything)
    output = inputs.looks.drop("output").join(written.with_columns(pl.lit(True).alias("output")), on=keys, how="left")
    look = analyse(inputs._replace(looks=output.with_columns(pl.col("output").fill_null(False))))
    return Pass(look, nights, written, update)


def nights_to_write(looks: pl.DataFrame, dirty: pl.DataFrame, as_of: str, everything: bool = False) -> pl.DataFrame:
    """``experiment_id, as_of`` of the nights a pass writes: each experiment's latest night up to
    ``as_of`` (tonight, or the night it stalled or closed), and for each dirty experiment every
    night on and after its ``from_day`` (all of them with ``everything``, e.g. a table just
    recreated). The other nights' inputs did not change."""
    nights = looks.select("experiment_id", "as_of").unique()
    if everything:
        return nights.sort("experiment_id", "as_of")
    latest = nights.filter(pl.col("as_of") <= dt.date.fromisoformat(as_of)).group_by("experiment_id").agg(
        pl.col("as_of").max())
    changed = nights.join(dirty, on="experiment_id").filter(pl.col("as_of") >= pl.col("from_day")).drop("from_day")
    return pl.concat([latest.select("experiment_id", "as_of"), changed]).unique().sort("experiment_id", "as_of")
