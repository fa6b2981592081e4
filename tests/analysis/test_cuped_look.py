"""``sql/aggregate_unit_covariates.sql`` against a hand computation, and the covariates' sums in the look's statistics.

One experiment ``e`` of organization ``o`` and task type ``t``, first assigned on 2026-10-29 at
10:00, with a 28-day covariate window (from 2026-10-01 10:00). Each user's history, and what
the rule of the SQL makes of it (the mean of the user's verified values over the sessions of
the family that started in the window, each session's latest authoritative outcome recorded
before the first assignment; time and tokens capped at 60 minutes and 5,000 tokens):

* u1: 10-05 success, 30 min, 9,000 tokens; 10-10 failure, 90 min, 1,000 tokens:
  success (1 + 0) / 2 = 0.5; time (30 + 60) / 2 = 45 (90 capped); tokens (5,000 + 1,000) / 2 = 3,000.
* u2: 09-30 failure (before the window: left out); 10-20 success, 10 min, 100 tokens:
  success 1, time 10, tokens 100.
* u3: one session on 10-28 judged twice: a failure recorded on 10-28, then a success recorded on
  10-29 at 11:00, after the first assignment (left out: a covariate is what was known then):
  success 0, time 20, tokens 300.
* u4: 10-29 09:00 (an hour before the first assignment, in the window), two evaluators at the
  same time: "a" says success, "b" failure; the first evaluator id wins, as in the experience:
  success 1, time 5, tokens 50.
* u5: a session of another task type, u6 one of another organization, u7 one with only a
  self-reported outcome (not authoritative), a session without a user: no covariate.
* u8: a session on 10-01 at 10:00, the window's first instant: success, 15 min, 10 tokens;
  u9: one a minute before it (09:59): none.

Each covariate is stored as the exact integer round(mean / resolution x 1e6): success at
resolution 1, time at 0.001 minute, tokens at 1.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest

from sql import load_sql

UTC = dt.timezone.utc
FIRST = dt.datetime(2026, 10, 29, 10, tzinfo=UTC)


def _at(day: str, hour: int = 9, minute: int = 0) -> dt.datetime:
    return dt.datetime.fromisoformat(f"{day}T{hour:02d}:{minute:02d}:00+00:00")


SESSIONS = [  # session, organization, task type, user, started
    ("s1", "o", "t", "u1", _at("2026-10-05")), ("s2", "o", "t", "u1", _at("2026-10-10")),
    ("s3", "o", "t", "u2", _at("2026-09-30")), ("s4", "o", "t", "u2", _at("2026-10-20")),
    ("s5", "o", "t", "u3", _at("2026-10-28")), ("s6", "o", "t", "u4", _at("2026-10-29", 9)),
    ("s7", "o", "t2", "u5", _at("2026-10-15")), ("s8", "o2", "t", "u6", _at("2026-10-15")),
    ("s9", "o", "t", "u7", _at("2026-10-15")), ("s10", "o", "t", None, _at("2026-10-15")),
    ("s11", "o", "t", "u8", _at("2026-10-01", 10)), ("s12", "o", "t", "u9", _at("2026-10-01", 9, 59)),
]
OUTCOMES = [  # session, success, minutes, tokens, recorded, evaluator, authoritative
    ("s1", True, 30.0, 9000.0, _at("2026-10-05", 10), "a", True),
    ("s2", False, 90.0, 1000.0, _at("2026-10-10", 10), "a", True),
    ("s3", False, 40.0, 200.0, _at("2026-09-30", 10), "a", True),
    ("s4", True, 10.0, 100.0, _at("2026-10-20", 10), "a", True),
    ("s5", False, 20.0, 300.0, _at("2026-10-28", 10), "a", True),
    ("s5", True, 25.0, 400.0, _at("2026-10-29", 11), "a", True),
    ("s6", True, 5.0, 50.0, _at("2026-10-29", 9, 30), "a", True),
    ("s6", False, 7.0, 70.0, _at("2026-10-29", 9, 30), "b", True),
    ("s7", True, 1.0, 1.0, _at("2026-10-15", 10), "a", True),
    ("s8", True, 1.0, 1.0, _at("2026-10-15", 10), "a", True),
    ("s9", True, 1.0, 1.0, _at("2026-10-15", 10), "self", False),
    ("s10", True, 1.0, 1.0, _at("2026-10-15", 10), "a", True),
    ("s11", True, 15.0, 10.0, _at("2026-10-01", 11), "a", True),
    ("s12", True, 1.0, 1.0, _at("2026-10-01", 11), "a", True),
]


def _warehouse() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    frames = {
        "staged_experiments": pl.DataFrame([{"experiment_id": "e", "org_id": "o", "task_type": "t",
                                             "metric_caps": '{"time_minutes": 60, "tokens": 5000}'}]),
        "staged_sessions": pl.DataFrame(SESSIONS, schema={"session_id": pl.String, "org_id": pl.String,
                                                          "task_type": pl.String, "user_id": pl.String,
                                                          "started_at": pl.Datetime("us", "UTC")}, orient="row"),
        "verification_records": pl.DataFrame(
            [(s, ok, m, k, at, ev, "1", a, None) for s, ok, m, k, at, ev, a in OUTCOMES],
            schema={"session_id": pl.String, "success": pl.Boolean, "time_minutes": pl.Float64, "tokens": pl.Float64,
                    "recorded_at": pl.Datetime("us", "UTC"), "evaluator_id": pl.String,
                    "evaluator_version": pl.String, "authoritative": pl.Boolean, "score": pl.Float64}, orient="row"),
        "look_first_assignments": pl.DataFrame([{"experiment_id": "e", "epoch": 0, "first_assigned_at": FIRST}],
                                               schema={"experiment_id": pl.String, "epoch": pl.Int64,
                                                       "first_assigned_at": pl.Datetime("us", "UTC")}),
    }
    for name, frame in frames.items():
        con.register(f"{name}_rows", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_rows")
    con.register("covariate_targets", pl.DataFrame([{"experiment_id": "e", "window_days": 28}]))
    con.register("analysed_metrics", pl.DataFrame(
        [("e", "success", 1.0), ("e", "time_minutes", 1e-3), ("e", "tokens", 1.0)],
        schema={"experiment_id": pl.String, "metric": pl.String, "resolution": pl.Float64}, orient="row"))
    return con


def test_each_users_covariate_is_its_verified_mean_known_before_the_first_assignment():
    with _warehouse() as con:
        got = {(m, u): int(x) for m, u, x in con.execute(
            f"SELECT metric, user_id, x FROM ({load_sql('aggregate_unit_covariates')}) WHERE experiment_id = 'e'").fetchall()}
    # the hand figures of the module docstring, as round(mean / resolution x 1e6)
    by_hand = {
        "success": {"u1": 0.5, "u2": 1.0, "u3": 0.0, "u4": 1.0, "u8": 1.0},
        "time_minutes": {"u1": 45.0, "u2": 10.0, "u3": 20.0, "u4": 5.0, "u8": 15.0},
        "tokens": {"u1": 3000.0, "u2": 100.0, "u3": 300.0, "u4": 50.0, "u8": 10.0},
    }
    resolution = {"success": 1.0, "time_minutes": 1e-3, "tokens": 1.0}
    expected = {(m, u): round(mean / resolution[m] * 1_000_000) for m, users in by_hand.items() for u, mean in users.items()}
    assert got == expected
    assert got[("time_minutes", "u1")] == 45_000_000_000  # 45 minutes = 45,000 thousandths, times 1e6


def test_the_arms_covariate_sums_are_those_of_their_units():
    """The look's sums of x, h and their cross-products with the unit value (``aggregate_arm_day_sums.sql``,
    then ``select_arm_statistics.sql``), against the units' own by plain Python, on two nights: a
    user-randomized experiment whose user u1 comes back on day 2 (its mean, and so x v, changes then)."""
    from tests.analysis.test_aggregation_sql import T0, run, session, warehouse

    rows = [session("c", "control", "a", "c1", 0, 1, True, "success"),
            session("c", "control", "b", "c2", 0, 2, False, "success"),
            session("c", "control", "e", "c3", 1, 2, True, "success"),
            session("c", "treatment", "c", "c4", 0, 3, True, "success"),
            session("c", "treatment", "d", "c5", 1, 1, False, "success"),
            session("c", "treatment", "f", "c6", 1, 4, True, "success"),
            session("u", "control", "u1", "d1", 0, 1, 0.4, "score"),
            session("u", "control", "u1", "d2", 2, 1, 0.8, "score"),
            session("u", "control", "u2", "d3", 0, 2, 0.1, "score"),
            session("u", "treatment", "u3", "d4", 1, 2, 0.9, "score")]
    # pre-period means: a 0.5, b 1, c 0, d 0.25 (success); u1 0.6, u3 0.2 (score); e, f and u2 have none
    covariates = {("c", "success"): {"a": 0.5, "b": 1.0, "c": 0.0, "d": 0.25}, ("u", "score"): {"u1": 0.6, "u3": 0.2}}
    resolution = {"success": 1.0, "score": 1e-6}
    con = warehouse(rows, [{"experiment_id": "c", "randomization_unit": "session", "metric_caps": None},
                           {"experiment_id": "u", "randomization_unit": "user", "metric_caps": None}])
    con.executemany("INSERT INTO look_unit_covariates VALUES (?, ?, ?, ?)",
                    [(e, m, user, round(x / resolution[m] * 1e6)) for (e, m), xs in covariates.items() for user, x in xs.items()])
    metrics = [{"experiment_id": "c", "metric": "success", "resolution": 1.0},
               {"experiment_id": "u", "metric": "score", "resolution": 1e-6}]
    for night in (1, 2):
        end = T0 + dt.timedelta(days=night + 1)
        got = run(con, metrics, [], end).sort("day").group_by("experiment_id", "arm").last()
        for r in got.iter_rows(named=True):
            # the arm's units: value = mean of its verified values by the night's end; x, h of its user
            units = {}
            for s in rows:
                if s["experiment_id"] == r["experiment_id"] and s["arm"] == r["arm"] and s["recorded_at"] < end:
                    value = s["success"] if s["experiment_id"] == "c" else s["score"]
                    units.setdefault(s["unit_id"], []).append(float(value))
            pre = covariates[(r["experiment_id"], r["metric"])]
            v = [sum(vs) / len(vs) for vs in units.values()]
            x = [pre.get(u, 0.0) for u in units]
            h = [1.0 if u in pre else 0.0 for u in units]
            n = len(v)

            def centered(a, b):
                return sum(i * j for i, j in zip(a, b)) - sum(a) * sum(b) / n

            expected = {"n": n, "sum_x": sum(x), "sum_h": sum(h), "m2_x": centered(x, x), "m2_h": centered(h, h),
                        "c_xh": centered(x, h), "c_xv": centered(x, v), "c_hv": centered(h, v)}
            assert {k: r[k] for k in expected} == pytest.approx(expected, abs=1e-9), (night, r["experiment_id"], r["arm"])
