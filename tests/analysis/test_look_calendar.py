"""The look's calendar: strata and epochs from the status stream, and the nights looked at.

Every expected row is written out by hand from the events below.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from tests.analysis.looks import T0, registration
from zcl_assets.analysis.look import look_end, nights, strata
from zcl_assets.analysis.registration import allocation_changes, decode_arms

EVENTS = {"experiment_id": pl.String, "status": pl.String, "at": pl.Datetime("us", "UTC"), "reason": pl.String,
          "allocation": pl.String}
D = dt.timedelta(days=1)


def _frame(regs):
    return pl.DataFrame(regs, schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                                "registered_at": pl.Datetime("us", "UTC")})


def _event(eid, status, at, allocation=None):
    return {"experiment_id": eid, "status": status, "at": at, "reason": "", "allocation": allocation}


def test_strata_start_at_each_change_and_reopen_and_epochs_at_each_reopen():
    regs = _frame([registration("a", ["control", "treatment"], [0.9, 0.1]),
                   registration("b", ["control", "treatment"], [0.5, 0.5]),
                   registration("c", ["control", "treatment"], [0.5, 0.5])])
    events = pl.DataFrame([
        _event("a", "active", T0 + 10 * D, '{"control": 0.5, "treatment": 0.5}'),
        _event("a", "reopened", T0 + 15 * D),
        _event("a", "active", T0 + 18 * D, '{"control": 0.3, "treatment": 0.7}'),
        _event("b", "paused", T0 + 3 * D),
        _event("b", "reopened", T0 + 5 * D),
        _event("b", "reopened", T0 + 5 * D),  # the same reopen twice: one stratum
        _event("c", "reopened", T0 + 7 * D),  # a reopen and a change at one moment: one stratum, a new epoch
        _event("c", "active", T0 + 7 * D, '{"control": 0.2, "treatment": 0.8}'),
    ], schema=EVENTS)
    arms = decode_arms(regs)
    changes, _ = allocation_changes(events, arms, regs)
    segments, shares, seg_bounds, epoch_bounds = strata(events, changes, arms)
    assert sorted(segments.rows()) == [("a", 0, 0), ("a", 1, 0), ("a", 2, 1), ("a", 3, 1), ("b", 0, 0), ("b", 1, 1),
                                       ("c", 0, 0), ("c", 1, 1)]
    got = {(e, s, a): share for e, s, a, share in shares.rows()}
    assert got == {
        ("a", 0, "control"): 0.9, ("a", 0, "treatment"): 0.1,
        ("a", 1, "control"): 0.5, ("a", 1, "treatment"): 0.5,
        ("a", 2, "control"): 0.5, ("a", 2, "treatment"): 0.5,  # a reopen keeps the last declared shares
        ("a", 3, "control"): 0.3, ("a", 3, "treatment"): 0.7,
        ("b", 0, "control"): 0.5, ("b", 0, "treatment"): 0.5, ("b", 1, "control"): 0.5, ("b", 1, "treatment"): 0.5,
        ("c", 0, "control"): 0.5, ("c", 0, "treatment"): 0.5, ("c", 1, "control"): 0.2, ("c", 1, "treatment"): 0.8,
    }
    assert sorted(seg_bounds.rows()) == [("a", 1, T0 + 10 * D), ("a", 2, T0 + 15 * D), ("a", 3, T0 + 18 * D),
                                         ("b", 1, T0 + 5 * D), ("c", 1, T0 + 7 * D)]
    assert sorted(epoch_bounds.rows()) == [("a", 1, T0 + 15 * D), ("b", 1, T0 + 5 * D), ("c", 1, T0 + 7 * D)]


def test_nights_carry_the_status_and_epoch_of_the_events_before_their_end():
    regs = _frame([registration("a", ["control", "treatment"]),
                   registration("b", ["control", "treatment"], registered_at=T0 + D + dt.timedelta(hours=20))])
    events = pl.DataFrame([
        _event("a", "active", T0 + dt.timedelta(hours=1)),
        _event("a", "paused", T0 + 2 * D + dt.timedelta(hours=12)),
        _event("a", "reopened", T0 + 4 * D),  # exactly at the end of the night of 10-04: not in it
    ], schema=EVENTS)
    first = pl.DataFrame({"experiment_id": ["a", "b"], "first_assigned_at": [T0 + dt.timedelta(hours=6), T0 + 3 * D]},
                         schema={"experiment_id": pl.String, "first_assigned_at": pl.Datetime("us", "UTC")})
    out = nights(regs, events, first, "2026-10-05")
    day = dt.date(2026, 10, 1)
    assert out.rows() == [
        # the first assignment at 06:00 on 10-01: 18 hours to the end of that night; the reopen
        # starts epoch 1 on 10-05, whose days count from its own first assignment (none yet)
        ("a", day, 0.75, "active", 0, day, None), ("a", day + D, 1.75, "active", 0, day, None),
        ("a", day + 2 * D, 2.75, "paused", 0, day, None), ("a", day + 3 * D, 3.75, "paused", 0, day, None),
        ("a", day + 4 * D, None, "reopened", 1, day + 4 * D, None),
        # registered on 10-02, first assigned at the very end of the night of 10-03 (not in it)
        ("b", day + D, None, "registered", 0, day + D, None), ("b", day + 2 * D, None, "registered", 0, day + D, None),
        ("b", day + 3 * D, 1.0, "registered", 0, day + D, None), ("b", day + 4 * D, 2.0, "registered", 0, day + D, None),
    ]
    assert out.columns == ["experiment_id", "as_of", "days_since_first_assignment", "status", "epoch", "epoch_start",
                           "last_unit_day"]
    # with epoch 1's first assignment (12:00 on 10-05), its days count from it
    first1 = pl.concat([first.with_columns(pl.lit(0, dtype=pl.Int64).alias("epoch")), pl.DataFrame(
        {"experiment_id": ["a"], "epoch": [1], "first_assigned_at": [T0 + 4 * D + dt.timedelta(hours=12)]},
        schema={"experiment_id": pl.String, "epoch": pl.Int64, "first_assigned_at": pl.Datetime("us", "UTC")})],
        how="align")
    again = nights(regs, events, first1, "2026-10-05").filter(pl.col("experiment_id") == "a")
    assert again.get_column("days_since_first_assignment").to_list() == [0.75, 1.75, 2.75, 3.75, 0.5]


def test_with_data_days_only_the_days_that_changed_are_nights():
    regs = _frame([registration("x", ["control", "treatment"], registered_at=dt.datetime(2026, 1, 1, 9,
                                                                                         tzinfo=dt.timezone.utc))])
    data_days = pl.DataFrame({"experiment_id": ["x"] * 5, "day": [dt.date(2026, 3, 5), dt.date(2026, 10, 3),
                                                                   dt.date(2026, 10, 3), dt.date(2026, 10, 9),
                                                                   dt.date(2025, 12, 31)]})
    first = pl.DataFrame(schema={"experiment_id": pl.String, "first_assigned_at": pl.Datetime("us", "UTC")})
    out = nights(regs, pl.DataFrame(schema=EVENTS), first, "2026-10-05", data_days=data_days)
    # the registration day, the data days within [registration, as_of] once each, and as_of
    assert out.get_column("as_of").to_list() == [dt.date(2026, 1, 1), dt.date(2026, 3, 5), dt.date(2026, 10, 3),
                                                 dt.date(2026, 10, 5)]
    # a registration after as_of has no night yet
    assert nights(regs, pl.DataFrame(schema=EVENTS), first, "2025-12-31").height == 0


def test_the_look_ends_at_the_next_utc_midnight():
    assert look_end("2026-10-05") == dt.datetime(2026, 10, 6, tzinfo=dt.timezone.utc)
