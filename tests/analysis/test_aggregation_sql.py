"""The aggregation SQL: exact per-unit sufficient statistics at every night, and bit-identical reruns.

Expected figures are computed in the test from the raw rows with plain Python (per unit:
its verified values visible by the end of the night, capped; then per arm: n, sum and
centered sum of squares of the unit means, and the per-user sums of the ratio).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict

import duckdb
import numpy as np
import polars as pl
import pytest

from sql import load_sql

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 10, 1, tzinfo=UTC)


OUTCOME = {"session_id": pl.String, "recorded_at": pl.Datetime("us", "UTC"), "success": pl.Float64,
           "time_minutes": pl.Float64, "tokens": pl.Float64, "score": pl.Float64}
VERSION = {**OUTCOME, "evaluator_id": pl.String, "evaluator_version": pl.String, "authoritative": pl.Boolean}


def warehouse(rows, experiments, versions=()):
    """``rows``: experience rows (the latest authoritative outcome of each session); ``versions``:
    every outcome of the sessions that have several (verification_records)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("exp_rows", pl.DataFrame(experiments))
    con.execute("CREATE TABLE staged_experiments AS SELECT * FROM exp_rows")
    authoritative = defaultdict(int)
    for v in versions:
        authoritative[v["session_id"]] += v["authoritative"]
    rows = [{**r, "authoritative_outcomes": authoritative.get(r["session_id"], int(r["verified"]))} for r in rows]
    con.register("x_rows", pl.DataFrame(rows, schema={
        "experiment_id": pl.String, "arm": pl.String, "unit_id": pl.String, "session_id": pl.String,
        "assigned_at": pl.Datetime("us", "UTC"), **OUTCOME, "verified": pl.Boolean, "authoritative_outcomes": pl.Int64}))
    con.execute("CREATE TABLE experience AS SELECT * EXCLUDE (session_id), session_id, unit_id AS user_id FROM x_rows")
    # no unit has a CUPED covariate here (tests/analysis/test_cuped_look.py has them)
    con.execute("CREATE TABLE look_unit_covariates (experiment_id VARCHAR, metric VARCHAR, user_id VARCHAR, x HUGEINT)")
    con.register("v_rows", pl.DataFrame(list(versions), schema=VERSION))
    con.execute("CREATE TABLE verification_records AS SELECT * FROM v_rows")
    return con


def run(con, metrics, bounds, as_of_end):
    con.register("analysed_metrics", pl.DataFrame(metrics, schema={"experiment_id": pl.String, "metric": pl.String,
                                                                   "resolution": pl.Float64}))
    con.register("segment_bounds", pl.DataFrame(bounds, schema={"experiment_id": pl.String, "segment": pl.Int64,
                                                                "starts_at": pl.Datetime("us", "UTC")}))
    # the stored daily sums of every day (a first build: every experiment dirty from day one),
    # then the cumulative statistics of the look as the night reads them
    con.register("dirty", con.execute("SELECT experiment_id, DATE '0001-01-01' AS from_day FROM staged_experiments").pl())
    con.execute(f"CREATE OR REPLACE TABLE arm_day_sums AS {load_sql('aggregate_arm_day_sums')}",
                {"from_at": dt.datetime(1, 1, 1, tzinfo=UTC)})
    return con.execute(load_sql("select_arm_statistics"), {"as_of_end": as_of_end}).pl()


def session(eid, arm, unit, sid, day, hour, value, metric, verified=True, recorded_day=None):
    at = T0 + dt.timedelta(days=day, hours=hour)
    rec = T0 + dt.timedelta(days=recorded_day if recorded_day is not None else day, hours=hour + 1)
    row = {"experiment_id": eid, "arm": arm, "unit_id": unit, "session_id": sid, "assigned_at": at, "recorded_at": rec,
           "verified": verified, "success": None, "time_minutes": None, "tokens": None, "score": None}
    row[metric] = value
    return row


ROWS = [
    # user-randomized score: u1 has three sessions over two days, u2 one unverified, u3 recorded late
    session("u", "control", "u1", "s1", 0, 1, 0.50, "score"),
    session("u", "control", "u1", "s2", 0, 5, 0.70, "score"),
    session("u", "control", "u1", "s3", 2, 3, 0.90, "score"),
    session("u", "control", "u2", "s4", 1, 2, 0.40, "score"),
    session("u", "control", "u2", "s5", 1, 4, 0.99, "score", verified=False),
    session("u", "treatment", "u3", "s6", 0, 2, 0.80, "score"),
    session("u", "treatment", "u3", "s7", 1, 2, 0.60, "score", recorded_day=4),
    session("u", "treatment", "u4", "s8", 2, 2, 0.75, "score"),
    # session-randomized time, capped at 60 minutes; a stratum starts on day 3
    session("s", "control", "a1", "a1", 0, 1, 30.0, "time_minutes"),
    session("s", "control", "a2", "a2", 1, 1, 500.0, "time_minutes"),
    session("s", "treatment", "a3", "a3", 1, 3, 20.5, "time_minutes"),
    session("s", "treatment", "a4", "a4", 3, 3, 25.25, "time_minutes"),
]
EXPERIMENTS = [{"experiment_id": "u", "randomization_unit": "user", "metric_caps": None},
               {"experiment_id": "s", "randomization_unit": "session", "metric_caps": '{"time_minutes": 60}'}]
METRICS = [{"experiment_id": "u", "metric": "score", "resolution": 1e-6},
           {"experiment_id": "s", "metric": "time_minutes", "resolution": 1e-3}]
BOUNDS = [{"experiment_id": "s", "segment": 1, "starts_at": T0 + dt.timedelta(days=3)}]


def expected(night_end):
    """Per (experiment, arm, segment): unit means and per-user sums by plain Python."""
    units = defaultdict(list)
    first = {}
    for r in ROWS:
        unit = r["unit_id"] if r["experiment_id"] == "u" else r["session_id"]
        key = (r["experiment_id"], unit)
        first[key] = min(first.get(key, r["assigned_at"]), r["assigned_at"])
        metric = "score" if r["experiment_id"] == "u" else "time_minutes"
        if r["verified"] and r["assigned_at"] < night_end and r["recorded_at"] < night_end:
            value = min(r[metric], 60.0) if metric == "time_minutes" else r[metric]
            units[(r["experiment_id"], r["arm"], unit)].append(value)
    out = defaultdict(lambda: {"v": [], "y": [], "m": []})
    for (eid, arm, unit), values in units.items():
        seg = 1 if eid == "s" and first[(eid, unit)] >= T0 + dt.timedelta(days=3) else 0
        out[(eid, arm, seg)]["v"].append(sum(values) / len(values))
        out[(eid, arm, seg)]["y"].append(sum(values))
        out[(eid, arm, seg)]["m"].append(len(values))
    return out


@pytest.mark.parametrize("night", [0, 1, 2, 4])
def test_sufficient_statistics_at_every_night_match_a_plain_computation(night):
    con = warehouse(ROWS, EXPERIMENTS)
    end = T0 + dt.timedelta(days=night + 1)
    got = run(con, METRICS, BOUNDS, end)
    # the last row of each key at or before the night
    got = got.filter(pl.col("day") <= (T0 + dt.timedelta(days=night)).date()).sort("day").group_by(
        "experiment_id", "arm", "segment").last()
    want = expected(end)
    assert {(r["experiment_id"], r["arm"], r["segment"]) for r in got.iter_rows(named=True)} == set(want)
    for r in got.iter_rows(named=True):
        w = want[(r["experiment_id"], r["arm"], r["segment"])]
        v, y, m = np.array(w["v"]), np.array(w["y"]), np.array(w["m"], float)
        assert r["n"] == len(v)
        assert r["sum_v"] == pytest.approx(v.sum(), abs=1e-9)
        assert r["m2_v"] == pytest.approx(((v - v.mean()) ** 2).sum(), abs=1e-9)
        assert r["sum_y"] == pytest.approx(y.sum(), abs=1e-9) and r["sum_m"] == m.sum()
        assert r["c_yy"] == pytest.approx(((y - y.mean()) ** 2).sum(), abs=1e-9)
        assert r["c_mm"] == pytest.approx(((m - m.mean()) ** 2).sum(), abs=1e-12)
        assert r["c_ym"] == pytest.approx(((y - y.mean()) * (m - m.mean())).sum(), abs=1e-9)


def test_caps_and_strata():
    con = warehouse(ROWS, EXPERIMENTS)
    got = run(con, METRICS, BOUNDS, T0 + dt.timedelta(days=5))
    s = got.filter(pl.col("experiment_id") == "s").sort("day").group_by("arm", "segment").last()
    control = s.filter(pl.col("arm") == "control").row(0, named=True)
    assert control["sum_v"] == pytest.approx(30.0 + 60.0)  # 500 minutes capped at 60
    assert set(s.filter(pl.col("arm") == "treatment").get_column("segment").to_list()) == {0, 1}


def test_a_rerun_is_bit_identical_whatever_the_threads():
    # 40,000 sessions of 8,000 users with awkward decimals: float sums in another order would
    # differ in the last bits; the exact integer accumulation cannot.
    rng = np.random.default_rng(5)
    n = 40_000
    rows = pl.DataFrame({
        "experiment_id": np.where(rng.random(n) < 0.5, "u", "s"),
        "arm": np.where(rng.random(n) < 0.5, "control", "treatment"),
        "unit_id": [f"user-{k}" for k in rng.integers(0, 8000, n)],
        "session_id": [f"ses-{k}" for k in range(n)],
        "assigned_at": [T0 + dt.timedelta(seconds=int(s)) for s in rng.integers(0, 20 * 86400, n)],
        "verified": rng.random(n) < 0.9,
        "score": np.round(rng.normal(0.6, 0.3, n), 6),
        "time_minutes": np.round(rng.gamma(6.0, 5.0, n), 3),
    }).with_columns((pl.col("assigned_at") + pl.duration(minutes=30)).alias("recorded_at"),
                    pl.lit(None, dtype=pl.Float64).alias("success"), pl.lit(None, dtype=pl.Float64).alias("tokens"))
    metrics = METRICS
    results = []
    for threads in (1, 4, 2):
        con = warehouse(rows.to_dicts(), EXPERIMENTS)
        con.execute(f"SET threads = {threads}")
        results.append(run(con, metrics, BOUNDS, T0 + dt.timedelta(days=21)))
    first = results[0].sort("experiment_id", "metric", "arm", "segment", "day")
    for other in results[1:]:
        other = other.sort("experiment_id", "metric", "arm", "segment", "day")
        assert first.equals(other, null_equal=True)
    assert math.isfinite(first.get_column("m2_v").sum())


def version(sid, day, value, metric, evaluator_version, authoritative=True):
    row = {"session_id": sid, "recorded_at": T0 + dt.timedelta(days=day, hours=12), "success": None,
           "time_minutes": None, "tokens": None, "score": None, "evaluator_id": "judge",
           "evaluator_version": evaluator_version, "authoritative": authoritative}
    row[metric] = value
    return row


def test_a_revised_outcome_counts_from_its_own_day_and_never_removes_a_session_from_earlier_nights():
    # r1 (session-randomized, control): 20 minutes on day 0, corrected to 30 on day 2; a
    #     self-report of 99 on day 3 is not authoritative.
    # r2 (treatment): 15 minutes on day 1, then a version without a time on day 2.
    # u9 (user-randomized, control): session r3 scores 0.2 on day 0, re-evaluated to 0.9 on
    #     day 1; session s9 scores 0.4 on day 0 (one outcome).
    # The experience table holds each session's latest authoritative outcome (30, none, 0.9).
    rows = [
        {**session("s", "control", "r1", "r1", 0, 1, 30.0, "time_minutes", recorded_day=2)},
        {**session("s", "treatment", "r2", "r2", 1, 1, None, "time_minutes", recorded_day=2)},
        session("u", "control", "u9", "r3", 0, 1, 0.9, "score", recorded_day=1),
        session("u", "control", "u9", "s9", 0, 2, 0.4, "score"),
    ]
    versions = [
        version("r1", 0, 20.0, "time_minutes", "1"), version("r1", 2, 30.0, "time_minutes", "2"),
        version("r1", 3, 99.0, "time_minutes", "1", authoritative=False),
        version("r2", 1, 15.0, "time_minutes", "1"), version("r2", 2, None, "time_minutes", "2"),
        version("r3", 0, 0.2, "score", "1"), version("r3", 1, 0.9, "score", "2"),
    ]
    con = warehouse(rows, EXPERIMENTS, versions)
    got = run(con, METRICS, BOUNDS, T0 + dt.timedelta(days=5))

    def state(night, experiment_id, arm):
        seen = got.filter((pl.col("experiment_id") == experiment_id) & (pl.col("arm") == arm)
                          & (pl.col("day") <= (T0 + dt.timedelta(days=night)).date()))
        return seen.sort("day").row(-1, named=True) if seen.height else None

    # night 0: r1 = 20; u9 = (0.2 + 0.4) / 2 = 0.3 with Y = 0.6, M = 2; r2 not yet assigned
    assert (state(0, "s", "control")["n"], state(0, "s", "control")["sum_v"]) == (1, pytest.approx(20.0))
    u = state(0, "u", "control")
    assert (u["n"], u["sum_v"], u["sum_y"], u["sum_m"]) == (1, pytest.approx(0.3), pytest.approx(0.6), 2.0)
    assert state(0, "s", "treatment") is None
    # night 1: r1 still 20 (its correction is recorded on day 2); r2 = 15; u9 = (0.9 + 0.4) / 2
    assert state(1, "s", "control")["sum_v"] == pytest.approx(20.0)
    assert (state(1, "s", "treatment")["n"], state(1, "s", "treatment")["sum_v"]) == (1, pytest.approx(15.0))
    u = state(1, "u", "control")
    assert (u["n"], u["sum_v"], u["sum_y"], u["sum_m"]) == (1, pytest.approx(0.65), pytest.approx(1.3), 2.0)
    # night 2 on: r1 = 30 (the self-report of day 3 changes nothing); r2's latest outcome has no
    # time, so r2 leaves the time metric, as tonight's experience row says
    for night in (2, 4):
        assert (state(night, "s", "control")["n"], state(night, "s", "control")["sum_v"]) == (1, pytest.approx(30.0))
        assert state(night, "s", "treatment")["n"] == 0


def test_a_missing_time_is_not_counted_as_the_cap():
    # experiment "s" caps time at 60 minutes: a verified session without a time has no
    # observation of it (DuckDB's least() skips NULL, so least(NULL, 60) would count it as 60);
    # the control arm is then a1 (30) and a2 (500 capped to 60): n = 2, sum 90
    rows = [r for r in ROWS if r["experiment_id"] == "s"]
    rows.append(session("s", "control", "a9", "a9", 0, 2, None, "time_minutes"))
    got = run(warehouse(rows, EXPERIMENTS), METRICS, BOUNDS, T0 + dt.timedelta(days=5))
    control = got.filter((pl.col("arm") == "control") & (pl.col("segment") == 0)).sort("day").row(-1, named=True)
    assert (control["n"], control["sum_v"]) == (2, pytest.approx(90.0))


def test_an_outcome_judged_after_its_assignment_day_enters_on_its_own_day():
    # one pass as of night 5 (as the nightly job runs it, not one pass per night): a session
    # assigned on night 0 and judged on night 3 with a single outcome counts from night 3, never
    # before; a1 (night 0, judged the same day) counts from night 0
    rows = [session("s", "control", "a1", "a1", 0, 1, 30.0, "time_minutes"),
            session("s", "control", "late", "late", 0, 2, 40.0, "time_minutes", recorded_day=3)]
    got = run(warehouse(rows, EXPERIMENTS), METRICS, BOUNDS, T0 + dt.timedelta(days=5)).sort("day")
    by_day = {r["day"]: (r["n"], r["sum_v"]) for r in got.iter_rows(named=True)}
    assert by_day == {T0.date(): (1, pytest.approx(30.0)), (T0 + dt.timedelta(days=3)).date(): (2, pytest.approx(70.0))}


def test_an_outcome_recorded_after_the_look_is_not_in_it_on_either_path():
    # as of the end of night 2: a1 (one outcome, night 0) counts; "after" is assigned on night
    # 1 and judged on night 3 (one outcome, after the end); r1 is judged 20 on night 0 and
    # corrected to 30 on night 3 (a revised session). Nothing recorded after the end enters:
    # the output has no day after night 2 and r1 stays at 20, so the control arm reads
    # n = 2, sum 50 on its last day.
    rows = [session("s", "control", "a1", "a1", 0, 1, 30.0, "time_minutes"),
            session("s", "control", "after", "after", 1, 2, 40.0, "time_minutes", recorded_day=3),
            session("s", "control", "r1", "r1", 0, 3, 30.0, "time_minutes", recorded_day=3)]
    versions = [version("r1", 0, 20.0, "time_minutes", "1"), version("r1", 3, 30.0, "time_minutes", "2")]
    end = T0 + dt.timedelta(days=3)  # the end of night 2
    got = run(warehouse(rows, EXPERIMENTS, versions), METRICS, BOUNDS, end).sort("day")
    assert got.get_column("day").max() < end.date()
    last = got.filter(pl.col("arm") == "control").row(-1, named=True)
    assert (last["n"], last["sum_v"]) == (2, pytest.approx(50.0))
