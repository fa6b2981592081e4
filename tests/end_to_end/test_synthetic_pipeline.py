"""A small hand-made world (tests/end_to_end/synthetic_world.py) through the nightly job.

The net that the ab_data test gives, without the shared data: every figure is counted from
the landed records in Python and compared with what the pipeline wrote. Each test names the
wiring it guards; docs/testing.md lists the planted bug each one kills.
"""

from __future__ import annotations

import datetime as dt
import math

import duckdb
import numpy as np
import pytest
from scipy import stats

from tests.end_to_end.synthetic_world import (
    AS_OF,
    DRIFT_DAY,
    THREE_ARMS,
    THREE_EVENING_SESSIONS,
    THREE_LATE_SESSIONS,
    USERS_PER_ARM,
    build_world,
)
from tests.fresh_look import fresh_look
from tests.plan_reference import r_reference
from tests.warehouse_checks import conservation_gaps, run_one_night

LOOK_END = dt.datetime.fromisoformat(AS_OF).replace(tzinfo=dt.timezone.utc) + dt.timedelta(days=1)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    world = build_world()
    world.write(landing)
    run_one_night(landing, warehouse, AS_OF)
    con = duckdb.connect(str(warehouse), read_only=True)
    yield world, con
    con.close()


def test_every_landed_row_is_staged_or_quarantined(synthetic):
    _, con = synthetic
    assert conservation_gaps(con) == {}


def test_a_nan_in_an_optional_numeric_field_is_quarantined_and_a_null_is_staged(synthetic):
    world, con = synthetic
    rules = dict(con.execute(
        "SELECT rule, count(*) FROM quarantine WHERE source_table = 'outcomes' GROUP BY ALL").fetchall())
    assert rules == {"not_finite": world.quarantined_outcomes}
    nulls = con.execute(
        "SELECT count(*) FILTER (WHERE time_minutes IS NULL), count(*) FILTER (WHERE tokens IS NULL), "
        "count(*) FILTER (WHERE isnan(time_minutes) OR isnan(tokens) OR isnan(score)) FROM staged_outcomes").fetchone()
    landed = [r for (table, _), rows in world.records.items() if table == "outcomes" for r in rows
              if r["score"] is None or r["score"] == r["score"]]  # every row but the NaN ones
    assert nulls == (sum(r["time_minutes"] is None for r in landed), sum(r["tokens"] is None for r in landed), 0)


def test_the_latest_authoritative_outcome_decides_a_session(synthetic):
    world, con = synthetic
    rows = con.execute(
        "SELECT experiment_id, arm, count(*) FILTER (WHERE verified), sum(CASE WHEN verified THEN success END) "
        "FROM experience WHERE assigned_at < ? GROUP BY ALL", [LOOK_END]).fetchall()
    found = {(e, a): (int(v), int(s)) for e, a, v, s in rows}
    expected = {}
    for key in world.verified:  # user-randomized: every session of a user carries the user's outcome
        per_unit = world.sessions[key] // world.assigned[key] if key[0] == "exp-users" else 1
        later = world.verified_after_look.get(key, 0)  # the experience holds outcomes recorded since
        expected[key] = (world.verified[key] * per_unit + later, world.successes[key] * per_unit + later)
    assert found == expected


def primary_rows(con, experiment_id, role="primary"):
    """The rows of the night AS_OF of one experiment and role, by treatment arm."""
    frame = con.execute("SELECT * FROM experiment_analysis WHERE as_of = ? AND experiment_id = ? AND role = ?",
                        [dt.date.fromisoformat(AS_OF), experiment_id, role]).pl()
    return {r["treatment_arm"]: r for r in frame.iter_rows(named=True)}


def test_three_arms_with_unequal_shares_and_a_control_named_baseline(synthetic):
    world, con = synthetic
    rows = primary_rows(con, "exp-three")
    assert set(rows) == {"variant_a", "variant_b"}
    c = ("exp-three", "baseline")
    counts = {arm: world.assigned[("exp-three", arm)] for arm, _ in THREE_ARMS}
    # chi-square goodness of fit of the assigned sessions against the registered shares (scipy)
    expected_p = stats.chisquare([counts[a] for a, _ in THREE_ARMS],
                                 [s * sum(counts.values()) for _, s in THREE_ARMS]).pvalue
    for arm, r in rows.items():
        t = ("exp-three", arm)
        assert r["control_arm"] == "baseline" and r["analysis_unit"] == "session"
        assert (r["n_control"], r["n_treatment"]) == (world.verified[c], world.verified[t])
        assert (r["successes_control"], r["successes_treatment"]) == (world.successes[c], world.successes[t])
        assert r["difference"] == pytest.approx(world.successes[t] / world.verified[t] - world.successes[c] / world.verified[c])
        assert (r["srm_units_control"], r["srm_units_treatment"]) == (world.assigned[c], world.assigned[t])
        assert r["srm_chisquare_p"] == pytest.approx(expected_p, rel=1e-9)
        assert not r["srm_fired"] and r["decision"] != "invalid"
        assert r["verified_share"] == pytest.approx(
            (world.verified[c] + world.verified[t]) / (world.assigned[c] + world.assigned[t]))


def test_every_night_counts_the_outcomes_recorded_by_its_end(synthetic):
    world, con = synthetic
    nights = con.execute(
        "SELECT as_of, treatment_arm, n_control, n_treatment FROM experiment_analysis "
        "WHERE experiment_id = 'exp-three' AND role = 'primary' ORDER BY ALL").fetchall()
    assert len({night for night, *_ in nights}) >= 10
    for night, arm, n_c, n_t in nights:
        by_night = {a: sum(d <= night for d in world.verified_days[("exp-three", a)]) for a in ("baseline", arm)}
        assert (n_c, n_t) == (by_night["baseline"], by_night[arm]), night


def test_the_plan_counts_on_the_registered_verified_share(synthetic):
    _, con = synthetic
    n_plan, n_fixed, share, r, alpha = con.execute(
        "SELECT planned_n_per_arm, n_fixed_per_arm, verified_share, inflation, comparison_alpha FROM experiment_plans "
        "WHERE experiment_id = 'exp-three'"
    ).fetchone()
    # N_plan = max(min_samples, ceil(R DE n_fixed / v)), DE = 1 (sessions), v = 0.8, R calibrated at
    # the comparison's alpha (two comparisons at 0.0125 / 2) and the per-test power: registered 0.8,
    # one guardrail sharing the type II error, 1 - 0.2 / 2 = 0.9
    assert alpha == 0.00625 and r == r_reference(0.00625, 0.9)
    assert share == 0.8 and n_plan == max(20, math.ceil(r * n_fixed / 0.8 - 1e-9))
    assert {r["planned_n_per_arm"] for r in primary_rows(con, "exp-three").values()} == {n_plan}


def test_a_null_time_is_left_out_of_the_guardrail_not_counted_as_a_unit(synthetic):
    world, con = synthetic
    rows = primary_rows(con, "exp-three", role="guardrail")
    c = world.times[("exp-three", "baseline")]
    for arm, r in rows.items():
        t = world.times[("exp-three", arm)]
        assert r["metric"] == "time_minutes"
        assert (r["n_control"], r["n_treatment"]) == (len(c), len(t))
        assert (r["mean_control"], r["mean_treatment"]) == (pytest.approx(np.mean(c)), pytest.approx(np.mean(t)))


def test_a_user_randomized_experiment_counts_users_for_its_sample_ratio(synthetic):
    world, con = synthetic
    (r,) = primary_rows(con, "exp-users").values()
    c, t = ("exp-users", "incumbent"), ("exp-users", "treatment")
    assert (r["control_arm"], r["treatment_arm"], r["analysis_unit"]) == ("incumbent", "treatment", "user")
    assert r["status"] == "active"  # completed only after the look
    assert (r["srm_units_control"], r["srm_units_treatment"]) == (USERS_PER_ARM, USERS_PER_ARM)
    assert r["srm_chisquare_p"] == pytest.approx(1.0) and not r["srm_fired"] and r["decision"] != "invalid"
    assert (r["n_control"], r["n_treatment"]) == (USERS_PER_ARM, USERS_PER_ARM)
    # per-user means: late sessions (after the look) of control users say success and must not count
    assert r["mean_control"] == pytest.approx(world.successes[c] / USERS_PER_ARM)
    assert r["mean_treatment"] == pytest.approx(world.successes[t] / USERS_PER_ARM)


def test_the_baseline_of_a_control_arm_not_named_control_is_watched_for_drift(synthetic):
    _, con = synthetic
    (r,) = primary_rows(con, "exp-drift").values()
    assert (r["control_arm"], r["treatment_arm"]) == ("current", "candidate")
    assert r["baseline_drift"] and r["decision"] == "invalid"
    assert r["invalid_since"] == dt.date.fromisoformat(DRIFT_DAY)
    assert f"invalid since {DRIFT_DAY}: " in r["decision_reason"]  # the report's words


def test_nothing_after_the_look_enters_it(synthetic):
    _, con = synthetic
    nights = con.execute("SELECT max(as_of) FROM experiment_analysis").fetchone()[0]
    assert nights == dt.date.fromisoformat(AS_OF)
    late = con.execute("SELECT count(*) FROM experience WHERE assigned_at >= ?", [LOOK_END]).fetchone()[0]
    assert late == THREE_LATE_SESSIONS + 10  # landed and staged, yet outside every look (the tests above)
    recorded_late = con.execute("SELECT count(*) FROM experience WHERE assigned_at < ? AND recorded_at >= ?",
                                [LOOK_END, LOOK_END]).fetchone()[0]
    assert recorded_late == THREE_EVENING_SESSIONS  # assigned in the look (SRM counts them), not verified in it


def test_the_look_of_one_night_is_that_night_of_the_stored_looks(synthetic):
    # fresh_look computes the night asked for alone; the job (take_looks) computed and stored every
    # night, so the stored rows of that night are the independent answer.
    _, con = synthetic
    # the job stores the nights of each experiment before the look too (the world's data
    # starts on 2026-03-01), not the look's night alone
    spans = con.execute("SELECT experiment_id, count(DISTINCT as_of), min(as_of), max(as_of) "
                        "FROM experiment_analysis GROUP BY ALL").fetchall()
    assert len(spans) == 3
    assert all(n > 10 and first == dt.date(2026, 3, 1) and last == dt.date.fromisoformat(AS_OF)
               for _, n, first, last in spans)
    fresh = fresh_look(con, AS_OF)
    assert fresh.get_column("as_of").unique().to_list() == [dt.date.fromisoformat(AS_OF)]
    stored = con.execute("SELECT * FROM experiment_analysis WHERE as_of = ?", [AS_OF]).pl()
    assert fresh.height == stored.height > 0
    compared = [c for c in fresh.columns if c != "analysed_at"]
    keys = ["experiment_id", "metric", "treatment_arm"]
    stored_rows = stored.select(compared).sort(keys)
    fresh_rows = fresh.select(compared).cast(stored_rows.schema).sort(keys)
    assert [c for c in compared if not stored_rows.get_column(c).equals(fresh_rows.get_column(c), null_equal=True)] == []
