"""`zcl plan --cuped` on a warehouse with returning users, against hand computations.

Family ``o3 / t3``, as a registration on 10-29 reads it (the 28 days before, and the 28 days
before those for each unit's covariate):

* September 10: 40 returning users with two verified sessions each; r0 to r19 succeed twice
  (covariate x = 1), r20 to r39 fail twice (x = 0).
* October 10: two sessions each of the 40 returning users and of 10 new ones (no September
  session: h = 0): r0-r14 succeed twice, r15-r19 once, r20-r34 never, r35-r39 once, and each new
  user once. 100 sessions, 50 successes, all verified.

Family ``o4 / t4``: the same with only 12 returning users (24 sessions with a covariate, fewer
than the 30 a plan needs) and 10 new ones.

The plan's sample is the two-sample z-test's (Chow, Shao and Wang 2008, section 4.2) at the
alpha share 0.05 / 4, times R = 1.568 for the confidence sequence, times ``1 - rho^2`` for CUPED
(Deng, Xu, Kohavi and Walker 2013: the adjusted outcome keeps ``1 - rho^2`` of the variance),
with ``rho^2`` the lower 90% confidence bound of the history's R^2 (Olkin and Finn 1995) and the
treatment arm's share worked out in ``stats.cuped.difference_share``.
"""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pytest
import statsmodels.api as sm
from click.testing import CliRunner
from scipy import stats

from tests.end_to_end.landing_files import land_jsonl
from tests.ingest.valid_records import VALID
from tests.plan_reference import r_reference
from tests.warehouse_checks import run_one_night
from zcl_assets.cli import main

UTC = dt.timezone.utc
R = r_reference(0.0125, 0.8)  # 1.568
Z = stats.norm.isf(0.05 / 4 / 2) + stats.norm.isf(0.2)  # z_{1 - 0.0125/2} + z_{0.8}
Z90 = stats.norm.ppf(0.9)  # 1.2816: the one-sided 90% bound

SEPTEMBER = {"r": [(1, 1)] * 20 + [(0, 0)] * 20}
OCTOBER = {"r": [(1, 1)] * 15 + [(1, 0)] * 5 + [(0, 0)] * 15 + [(1, 0)] * 5, "n": [(1, 0)] * 10}


def _sessions(org: str, task: str, day: str, users: dict[str, list[tuple[int, int]]]):
    at = dt.datetime.fromisoformat(f"{day}T09:00:00+00:00")
    sessions, outcomes = [], []
    for prefix, results in users.items():
        for u, pair in enumerate(results):
            for k, success in enumerate(pair):
                sid = f"{org}-{day}-{prefix}{u}-{k}"
                sessions.append({**VALID["sessions"], "session_id": sid, "org_id": org, "task_type": task,
                                 "user_id": f"{org}-{prefix}{u}", "experiment_id": None, "delivered_arm": None,
                                 "started_at": at.isoformat(), "ended_at": (at + dt.timedelta(minutes=5)).isoformat()})
                outcomes.append({**VALID["outcomes"], "session_id": sid, "success": bool(success),
                                 "recorded_at": (at + dt.timedelta(minutes=10)).isoformat()})
    return sessions, outcomes


def _land(landing):
    reg = {**VALID["experiments"], "experiment_id": "e0", "org_id": "other", "task_type": "x", "guardrails": [],
           "metric_caps": {}, "registered_at": "2026-09-01T00:00:00+00:00"}
    land_jsonl(landing, "experiments", "2026-09-01", "reg.jsonl", [reg])
    few = {"r": [(1, 1)] * 6 + [(0, 0)] * 6}
    for day, o3, o4 in (("2026-09-10", SEPTEMBER, few), ("2026-10-10", OCTOBER, {**few, "n": [(1, 0)] * 10})):
        s3, out3 = _sessions("o3", "t3", day, o3)
        s4, out4 = _sessions("o4", "t4", day, o4)
        land_jsonl(landing, "sessions", day, "part.jsonl", s3 + s4)
        land_jsonl(landing, "outcomes", day, "part.jsonl", out3 + out4)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan_cuped")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    _land(landing)
    run_one_night(landing, warehouse, "2026-10-28")
    return warehouse


def plan(warehouse, *args, as_json=True):
    result = CliRunner().invoke(main, ["--warehouse", str(warehouse), "plan", "--as-of", "2026-10-29", *args,
                                       *(["--json"] if as_json else [])], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if as_json else result.output


def _bound(r2: float, n: int, k: int = 2) -> float:
    """The lower 90% bound of rho^2 (Olkin and Finn 1995): adjusted R^2 less 1.2816 standard errors."""
    adjusted = 1 - (1 - r2) * (n - 1) / (n - k - 1)
    se = math.sqrt(4 * r2 * (1 - r2) ** 2 * (n - k - 1) ** 2 / ((n**2 - 1) * (n + 3)))
    return adjusted - Z90 * se


def test_the_history_r2_is_the_ols_r2_of_the_units_on_their_covariate():
    """The hand figures below, checked once against statsmodels on the units themselves."""
    y = np.array([v for pair in OCTOBER["r"] + OCTOBER["n"] for v in pair], dtype=float)
    x = np.array([1.0] * 40 + [0.0] * 40 + [0.0] * 20)
    h = np.array([1.0] * 80 + [0.0] * 20)
    assert sm.OLS(y, sm.add_constant(np.column_stack([x, h]))).fit().rsquared == pytest.approx(0.45, abs=1e-12)
    users = np.array([np.mean(pair) for pair in OCTOBER["r"] + OCTOBER["n"]])
    xu, hu = np.array([1.0] * 20 + [0.0] * 30), np.array([1.0] * 40 + [0.0] * 10)
    assert sm.OLS(users, sm.add_constant(np.column_stack([xu, hu]))).fit().rsquared == pytest.approx(0.75, abs=1e-12)


def test_a_session_randomized_plan_counts_on_the_reduction_the_history_supports(warehouse):
    p = plan(warehouse, "--org", "o3", "--task-type", "t3", "--baseline", "0.5", "--mde", "0.1", "--cuped")
    # The 100 October sessions on (x, h): three groups, x = 1 (40 sessions, 35 successes, mean 0.875), x = 0 with
    # history (40, 5, 0.125) and new (20, 10, 0.5); the fit is the group means, so R^2 = between / total =
    # (40 x 0.375^2 + 40 x 0.375^2) / (100 x 0.25) = 11.25 / 25 = 0.45 (80% returning x phi^2 = 0.75^2).
    assert p["cuped"] is True and p["cuped_r2"] == pytest.approx(0.45, rel=1e-12)
    # the bound, n = 100, k = 2: adjusted 1 - 0.55 x 99 / 97 = 0.438660, s.e. sqrt(4 x 0.45 x 0.55^2 x 97^2 /
    # (9999 x 103)) = 0.070530, bound 0.438660 - 1.2816 x 0.070530 = 0.348272
    bound = _bound(0.45, 100)
    assert bound == pytest.approx(0.348272, abs=1e-6)
    # the difference's variance: control 0.25, treatment 0.6 x 0.4 = 0.24; the treatment turns a share
    # 0.1 / 0.5 of each unit's failures into successes, keeping 0.8 of the covariance: the covariate removes
    # bound x 0.25 x (1 + 0.64) of 0.49, a share 0.291411
    reduction = bound * 0.25 * (1 + 0.8**2) / 0.49
    assert p["cuped_planned_r2"] == pytest.approx(reduction, rel=1e-9) and reduction == pytest.approx(0.291411, abs=1e-6)
    n_fixed = Z**2 * 0.49 / 0.1**2  # 546.4
    planned = math.ceil(R * (1 - reduction) * n_fixed)  # 1.568 x 0.708589 x 546.40 = 607.1: 608, against 857 without
    assert p["n_fixed_per_arm"] == pytest.approx(n_fixed, rel=1e-12) and p["planned_n_per_arm"] == planned == 608
    # 100 sessions in 28 days, this experiment alone: ceil(2 x 608 / (100 / 28)) = ceil(340.5)
    assert p["days_to_plan"] == math.ceil(2 * planned / (100 / 28)) == 341
    assert p["cuped_basis"] == (
        "CUPED applies (Deng et al. 2013): in the family's last 28 days each unit's pre-period mean explained "
        "rho^2 = 0.45 of the variance (100 units, 80 of them with a pre-period mean); the plan counts on 0.2914, its "
        "lower 90% confidence bound (Olkin and Finn 1995), so it plans 1 - 0.2914 of the units it would without")
    text = plan(warehouse, "--org", "o3", "--task-type", "t3", "--baseline", "0.5", "--mde", "0.1", as_json=False)
    assert "planned sample: 608 sessions per arm (fixed-horizon 546 x R 1.57 x (1 - 0.2914) for CUPED" in text
    assert "variance reduction: CUPED applies (Deng et al. 2013)" in text


def test_without_cuped_or_without_history_the_plan_counts_on_nothing(warehouse):
    plain = math.ceil(R * Z**2 * 0.49 / 0.1**2)  # 857, as tests/end_to_end/test_plan_command.py
    off = plan(warehouse, "--org", "o3", "--task-type", "t3", "--baseline", "0.5", "--mde", "0.1", "--no-cuped")
    assert (off["cuped"], off["cuped_planned_r2"], off["planned_n_per_arm"]) == (False, 0.0, plain)
    assert off["cuped_basis"] == ("CUPED not asked for by the registration: no adjustment, and the plan counts on no "
                                  "variance reduction")
    # o4: 12 returning users, 24 sessions with a covariate, under the 30 a plan needs
    few = plan(warehouse, "--org", "o4", "--task-type", "t4", "--baseline", "0.5", "--mde", "0.1", "--cuped")
    assert (few["cuped"], few["cuped_r2"], few["cuped_planned_r2"], few["planned_n_per_arm"]) == (False, None, 0.0, plain)
    assert few["cuped_basis"] == ("CUPED asked for, but 24 units of the family's last 28 days had a pre-period mean "
                                  "and 30 are needed: no adjustment, and the plan counts on no variance reduction")
    # a continuous primary: the look adjusts it, but the history measures rho^2 on success only
    time = plan(warehouse, "--org", "o3", "--task-type", "t3", "--metric", "time_minutes", "--direction", "decrease",
                "--baseline", "30", "--sd", "12", "--mde", "3", "--cuped")
    assert (time["cuped"], time["cuped_r2"], time["cuped_planned_r2"]) == (True, None, 0.0)
    assert time["planned_n_per_arm"] == math.ceil(R * Z**2 * 288 / 9)  # 560, as without CUPED
    assert "the history's rho^2 is measured on success only" in time["cuped_basis"]


def test_a_user_randomized_plan_counts_on_the_reduction_of_per_user_means(warehouse):
    p = plan(warehouse, "--org", "o3", "--task-type", "t3", "--baseline", "0.5", "--mde", "0.1", "--unit", "user",
             "--cuped")
    # the 50 users' October means: 15 at 1 and 5 at 0.5 (x = 1), 15 at 0 and 5 at 0.5 (x = 0), 10 new at 0.5;
    # group means 0.875, 0.125, 0.5: R^2 = (20 x 0.375^2 x 2) / (30 x 0.25) = 5.625 / 7.5 = 0.75
    assert p["cuped_r2"] == pytest.approx(0.75, rel=1e-12)
    bound = _bound(0.75, 50)  # adjusted 0.739362 less 1.2816 x 0.055921: 0.667696
    assert bound == pytest.approx(0.667696, abs=1e-6)
    # the variance of a user's mean from the history: the users' rates vary 7.5 / 49 = 0.153061 (a sample
    # variance) = 0.612245 x p(1 - p) at the history's rate 0.5; planned at the registered baseline 0.5 as
    # the sd of a mean, the same in both arms, so the share removed is the bound itself
    variance = 7.5 / 49
    assert p["unit_sd"] == pytest.approx(math.sqrt(variance), rel=1e-9)
    assert p["cuped_planned_r2"] == pytest.approx(bound, rel=1e-9)
    # 1.568 x 0.332304 x 11.1557 x 0.306122 / 0.01 = 177.9: 178 users, against 536 without
    planned = math.ceil(R * (1 - bound) * Z**2 * 2 * variance / 0.1**2)
    assert p["planned_n_per_arm"] == planned == 178
    assert p["days_to_plan"] == math.ceil(2 * planned / (50 / 28)) == 200  # 50 users in 28 days
