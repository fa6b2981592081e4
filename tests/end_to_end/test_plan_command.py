"""`zcl plan` on a warehouse built by one night, against hand computations.

Two families of one landing:

* ``o / t``: 50 sessions a day from 10-01 to 10-28, of 10 new users a day, none in an
  experiment, 40 of them with a verified outcome, 20 of those a success, and one live
  experiment (``e1``, registered 10-01) holding slot 1 of 4;
* ``o2 / t2``: four live experiments registered 10-01, with 6, 10, 14 and 18 assigned and
  judged sessions a day: every slot is held.

The plans asked as of 10-29 read the 28 days before: 50 sessions or 10 users a day. The
sample size is the two-sample z-test's (Chow, Shao and Wang 2008, section 4.2, unpooled
variances), at the comparison's alpha share 0.05 / 4 (Bonferroni over the K = 4 slots),
inflated by R = 1.568 for the confidence sequence (calibrated at that alpha and power 0.8); the days share the traffic with the
family's live experiment: ceil(total units / (traffic / 2)).
"""

from __future__ import annotations

import datetime as dt
import json
import math

import duckdb
import pytest
from click.testing import CliRunner
from scipy import stats

from tests.end_to_end.landing_files import land_jsonl
from tests.ingest.valid_records import VALID
from tests.plan_reference import r_reference
from tests.warehouse_checks import run_one_night
from zcl_assets.cli import main

UTC = dt.timezone.utc
START = dt.datetime(2026, 10, 1, tzinfo=UTC)
R = r_reference(0.0125, 0.8)  # 1.568
Z = stats.norm.isf(0.05 / 4 / 2) + stats.norm.isf(0.2)  # z_{1 - 0.0125/2} + z_{0.8} = 2.4977 + 0.8416


def _land(landing):
    regs = [{**VALID["experiments"], "experiment_id": eid, "org_id": org, "task_type": task, "guardrails": [],
             "metric_caps": {}, "registered_at": START.isoformat(), "mde": 0.1, "baseline_mean": 0.3,
             "expected_verified_share": 1.0}
            for eid, org, task in [("e1", "o", "t")] + [(f"f{i}", "o2", "t2") for i in range(4)]]
    land_jsonl(landing, "experiments", "2026-10-01", "reg.jsonl", regs)
    for day in range(28):
        at = START + dt.timedelta(days=day, hours=9)
        sessions, assignments, outcomes = [], [], []
        for i in range(50):
            sessions.append({**VALID["sessions"], "session_id": f"s{day}-{i}", "org_id": "o", "task_type": "t",
                             "user_id": f"u{day}-{i % 10}", "experiment_id": None, "delivered_arm": None,
                             "started_at": at.isoformat(), "ended_at": (at + dt.timedelta(minutes=5)).isoformat()})
            if i % 5 != 4:  # 40 of 50 verified, 20 of them successes
                outcomes.append({**VALID["outcomes"], "session_id": f"s{day}-{i}", "success": i % 5 < 2,
                                 "recorded_at": (at + dt.timedelta(minutes=10)).isoformat()})
        for f in range(4):
            for i in range(6 + 4 * f):  # 6, 10, 14, 18 a day: their plans end on different days
                sid, arm = f"f{f}-{day}-{i}", "c" if i % 2 else "b"
                sessions.append({**VALID["sessions"], "session_id": sid, "org_id": "o2", "task_type": "t2",
                                 "user_id": f"v-{sid}", "experiment_id": f"f{f}", "delivered_arm": arm,
                                 "started_at": at.isoformat(), "ended_at": (at + dt.timedelta(minutes=5)).isoformat()})
                assignments.append({**VALID["assignments"], "session_id": sid, "experiment_id": f"f{f}", "arm": arm,
                                    "unit_id": f"v-{sid}", "assigned_at": at.isoformat()})
                outcomes.append({**VALID["outcomes"], "session_id": sid, "success": i % 3 == 0,
                                 "recorded_at": (at + dt.timedelta(minutes=10)).isoformat()})
        stamp = at.date().isoformat()
        for table, rows in (("sessions", sessions), ("assignments", assignments), ("outcomes", outcomes)):
            land_jsonl(landing, table, stamp, "part.jsonl", rows)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    _land(landing)
    run_one_night(landing, warehouse, "2026-10-28")
    return warehouse


def plan(warehouse, *args) -> dict:
    result = CliRunner().invoke(main, ["--warehouse", str(warehouse), "plan", "--as-of", "2026-10-29", *args, "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(("unit", "traffic"), [("session", 50.0), ("user", 10.0)])
def test_a_binary_plan_with_a_free_slot(warehouse, unit, traffic):
    p = plan(warehouse, "--org", "o", "--task-type", "t", "--baseline", "0.5", "--mde", "0.1", "--unit", unit)
    # session: a proportion, variances p(1 - p) and (p + mde)(1 - p - mde): 0.25 + 0.24;
    # user: the mean of each user's rate, sd sqrt(p (1 - p)) in both arms: 0.25 + 0.25
    variance = 0.25 + 0.24 if unit == "session" else 0.25 + 0.25
    n_fixed = Z**2 * variance / 0.1**2  # 546.4 (session), 557.6 (user)
    planned = math.ceil(R * n_fixed)  # 857, 875
    assert (p["admitted"], p["alpha_slot"], p["alpha_slots"], p["alpha_share"]) == (True, 2, 4, 0.0125)
    assert p["n_fixed_per_arm"] == pytest.approx(n_fixed, rel=1e-12)
    assert p["planned_n_per_arm"] == planned and p["planned_units"] == {"control": planned, "treatment": planned}
    assert p["traffic_per_day"] == pytest.approx(traffic) and p["experiments_sharing_traffic"] == 2
    assert p["days_to_plan"] == math.ceil(2 * planned / (traffic / 2))  # 69 (session), 350 (user)
    # user: the history's 224 users with a verified session (8 of 10 a day) have 5 each, all successes or
    # all failures, half and half: their rates vary 0.25 x 224 / 223 (a sample variance) > p(1 - p), held
    # at the bound (f = 1, design effect 5: sessions of a user alike, intraclass correlation 1)
    if unit == "user":
        assert (p["unit_sd"], p["design_effect"]) == (0.5, 5.0)
        assert p["variance_basis"] == ("the family's history: 224 users with 5.0 verified sessions each on average; the "
                                       "variance of a user's mean success is 1.0 x p(1 - p) (design effect 5.0)")
    else:
        assert p["variance_basis"] == "p(1 - p) of a proportion"


@pytest.mark.parametrize(("unit", "traffic"), [("session", 50.0), ("user", 10.0)])
def test_a_continuous_plan_and_the_mde_reached_within_given_days(warehouse, unit, traffic):
    p = plan(warehouse, "--org", "o", "--task-type", "t", "--metric", "time_minutes", "--direction", "decrease",
             "--baseline", "30", "--sd", "12", "--mde", "3", "--unit", unit, "--days", "100")
    n_fixed = Z**2 * (144 + 144) / 3**2  # 356.8
    planned = math.ceil(R * n_fixed)  # 560
    assert p["n_fixed_per_arm"] == pytest.approx(n_fixed, rel=1e-12) and p["planned_n_per_arm"] == planned
    assert p["days_to_plan"] == math.ceil(2 * planned / (traffic / 2))
    # within 100 days at traffic / 2 a day: at most 100 * traffic / 4 units per arm, so
    # R Z^2 2 sd^2 / mde^2 <= that: the smallest such MDE, 2.007 (session) and 4.488 (user)
    most = 100 * traffic / 4
    assert p["mde_within_days"] == pytest.approx(math.sqrt(R * Z**2 * 288 / most), rel=1e-6)


def test_no_free_slot_names_the_day_the_first_live_experiment_should_reach_its_plan(warehouse):
    p = plan(warehouse, "--org", "o2", "--task-type", "t2", "--baseline", "0.5", "--mde", "0.1")
    assert (p["admitted"], p["alpha_slot"]) == (False, None)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        looks = con.execute("SELECT experiment_id, as_of, max(days_to_plan) FROM experiment_analysis WHERE is_primary "
                            "AND org_id = 'o2' AND as_of = (SELECT max(as_of) FROM experiment_analysis) GROUP BY ALL").fetchall()
    assert len(looks) == 4 and all(left is not None for _, _, left in looks)
    ends = sorted(as_of + dt.timedelta(days=math.ceil(left)) for _, as_of, left in looks)
    assert len(set(ends)) == 4 and p["next_free_slot"] == ends[0].isoformat()


def test_the_text_says_the_plan_and_a_registration_the_contract_refuses_is_said_so(warehouse):
    result = CliRunner().invoke(main, ["--warehouse", str(warehouse), "plan", "--org", "o", "--task-type", "t",
                                       "--baseline", "0.5", "--mde", "0.1", "--as-of", "2026-10-29"])
    assert result.exit_code == 0, result.output
    assert "alpha slot 2 of 4 free: alpha share 0.0125" in result.output
    assert "planned sample: 857 sessions per arm" in result.output
    assert "traffic: 50 sessions a day over the 28 days before, shared by 2 live experiments (this one included); days to the plan: 69" in result.output
    assert "R 1.57: what the confidence sequence, read every night, needs beyond a single fixed-horizon test" in result.output
    refused = CliRunner().invoke(main, ["--warehouse", str(warehouse), "plan", "--org", "o", "--task-type", "t",
                                        "--baseline", "0.5", "--mde", "-0.1"])
    assert refused.exit_code != 0 and "the registration would be refused: mde" in refused.output


def _mde(p, units, share, r):
    """The smallest increase d whose plan is ``units``: R n_fixed(d) / v = units, n_fixed as above, so
    Z^2 (p q + (p + d)(q - d)) = m d^2 with m = units v / R, a quadratic in d (its positive root)."""
    q, m, z2 = 1 - p, units * share / r, Z**2
    return (z2 * (q - p) + math.sqrt(z2**2 * (q - p) ** 2 + 8 * p * q * z2 * (m + z2))) / (2 * (m + z2))


def test_the_family_outlook_of_the_night_is_the_plan_inverted(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = {r["org_id"]: r for r in con.execute("SELECT * FROM family_outlook").pl().to_dicts()}
        last_end = con.execute("SELECT experiment_id, as_of, max(days_to_plan) FROM experiment_analysis WHERE is_primary "
                               "AND org_id = 'o2' AND as_of = DATE '2026-10-28' GROUP BY ALL").fetchall()
    assert set(rows) == {"o", "o2"}
    o, o2 = rows["o"], rows["o2"]
    # o / t: 50 sessions a day, 40 verified (0.8), 20 of them successes (0.5); slot 2 of 4 free, shared with e1;
    # units per arm in D days: floor(D x 50 / 2 experiments / 2 arms) = 175, 350, 700
    assert (o["as_of"], o["traffic_per_day"], o["verified_share"], o["baseline"]) == (dt.date(2026, 10, 28), 50.0, 0.8, 0.5)
    assert (o["slot_free"], o["next_free_slot"], o["experiments_sharing"], o["alpha_slots"]) == (True, None, 2, 4)
    assert o["comparison_alpha"] == 0.0125 and o["inflation"] == pytest.approx(R)
    assert [o[f"units_per_arm_{d}d"] for d in (14, 28, 56)] == [175, 350, 700]
    # at p = 0.5 the root is d^2 = 0.5 Z^2 / (m + Z^2): 0.2356, 0.1714, 0.1230
    for d, units in ((14, 175), (28, 350), (56, 700)):
        assert o[f"mde_{d}d"] == pytest.approx(math.sqrt(0.5 * Z**2 / (units * 0.8 / R + Z**2)), rel=1e-7)
        assert o[f"mde_{d}d"] == pytest.approx(_mde(0.5, units, 0.8, R), rel=1e-7)
    # o2 / t2: 48 sessions a day, all verified, 17 successes of 48 a day (2 + 4 + 5 + 6); every slot held:
    # shared by 4; 84 units a side in 14 days is below the minimum of 100, so no MDE there
    assert (o2["traffic_per_day"], o2["verified_share"]) == (48.0, 1.0) and o2["baseline"] == pytest.approx(17 / 48)
    assert (o2["slot_free"], o2["experiments_sharing"]) == (False, 4)
    ends = sorted(as_of + dt.timedelta(days=math.ceil(left)) for _, as_of, left in last_end)
    assert o2["next_free_slot"] == ends[0]
    assert [o2[f"units_per_arm_{d}d"] for d in (14, 28, 56)] == [84, 168, 336] and o2["mde_14d"] is None
    for d, units in ((28, 168), (56, 336)):
        assert o2[f"mde_{d}d"] == pytest.approx(_mde(17 / 48, units, 1.0, R), rel=1e-7)


def test_the_report_shows_each_familys_power_curve(warehouse):
    html = next(warehouse.parent.glob("**/*.html")).read_text(encoding="utf-8")
    assert "Planning: what each family could detect tonight (2)" in html
    assert "o / t" in html and "a slot is free (shared by 2); detectable at power 80%: +0.236 in 14 days, +0.171 in 28 days, +0.123 in 56 days" in html
    assert "no slot free until about" in html and html.count('alt="power curve of ') == 2


def test_the_familys_history_as_the_registration_measures_it(warehouse):
    import numpy as np
    import polars as pl

    from sql import load_sql

    at = dt.datetime(2026, 10, 29, tzinfo=UTC)
    new = pl.DataFrame({"experiment_id": ["s", "u"], "org_id": ["o", "o"], "task_type": ["t", "t"],
                        "randomization_unit": ["session", "user"], "registered_at": [at, at]})
    with duckdb.connect(str(warehouse), read_only=True) as con:
        con.register("new_registrations", new)
        rows = {r["experiment_id"]: r for r in con.execute(load_sql("measure_family_traffic")).pl().to_dicts()}
    # 28 days x 50 sessions of 10 users a day; 40 sessions verified a day, 20 of them successes; the 8 users
    # a day with a verified session have 5 each, 4 users all successes and 4 all failures
    rates = np.array([1.0] * 112 + [0.0] * 112)
    for eid, traffic in (("s", 50.0), ("u", 10.0)):
        r = rows[eid]
        assert (r["traffic_per_day"], r["verified_share"], r["success_rate"]) == (traffic, 0.8, 0.5)
    u = rows["u"]
    assert (u["history_users"], u["sessions_per_user"]) == (224, 5.0)
    assert u["user_rate_variance"] == pytest.approx(float(np.var(rates, ddof=1)), rel=1e-12)
    # a session-randomized plan does not read the users' history, so it is not measured for it
    assert (rows["s"]["history_users"], rows["s"]["user_rate_variance"]) == (0, None)


def test_a_night_without_recent_sessions_has_an_empty_outlook_and_nonsense_days_are_refused(warehouse):
    from zcl_assets.analysis.planner import family_outlook
    from zcl_assets.analysis.registration import RegistrationPolicy

    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert family_outlook(con, dt.date(2027, 6, 1), RegistrationPolicy()).height == 0
    for days in ("nan", "inf", "0", "-5", "40000"):
        result = CliRunner().invoke(main, ["--warehouse", str(warehouse), "plan", "--org", "o", "--task-type", "t",
                                           "--baseline", "0.5", "--mde", "0.1", "--days", days])
        assert result.exit_code == 2 and "--days" in result.output, (days, result.output)
    # an unreachable plan is null in the JSON, which stays JSON
    unreachable = plan(warehouse, "--org", "o", "--task-type", "t", "--baseline", "0.98", "--mde", "0.05")
    assert unreachable["planned_n_per_arm"] is None and unreachable["days_to_plan"] is None
