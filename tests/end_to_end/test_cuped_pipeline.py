"""A warehouse with returning users, driven by the runner through the covariates into an adjusted look.

The world is ``tests/end_to_end/cuped_world.py``: 100 units of experiment ``cx``, 60 of them of users
with a pre-period mean. The look of 2026-11-06 must adjust the difference for it: the difference is
the treatment coefficient of the OLS fit ``v ~ 1 + t + x + h`` (statsmodels, on the units), each
arm's variance that of its residuals (Deng, Xu, Kohavi and Walker 2013), and the confidence sequence
reads them (Waudby-Smith et al. 2024; the reference formula of ``tests/analysis/looks.py``).
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest
import statsmodels.api as sm
from click.testing import CliRunner

from tests.analysis.looks import cs_reference, halfwidth
from tests.end_to_end import cuped_world as world
from tests.warehouse_checks import run_one_night
from zcl_assets.cli import main

LAST = "2026-11-06"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuped")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    world.land(landing)
    run_one_night(landing, warehouse, LAST)
    return warehouse


def _look(warehouse) -> dict:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("SELECT * FROM experiment_analysis WHERE experiment_id = ? AND is_primary AND as_of = ?",
                           [world.EXPERIMENT, LAST]).pl().row(0, named=True)


def test_the_plan_applies_cuped_and_each_unit_has_its_users_pre_period_mean(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        plan = con.execute("SELECT cuped, covariate_window_days, cuped_r2, cuped_planned_r2 FROM experiment_plans "
                           "WHERE experiment_id = ?", [world.EXPERIMENT]).fetchone()
        stored = dict(con.execute("SELECT user_id, x FROM look_unit_covariates WHERE experiment_id = ? AND metric = 'success'",
                                  [world.EXPERIMENT]).fetchall())
    # 120 history units (September and October 10 sessions) with an August covariate half the time: CUPED applies
    assert plan[0] is True and plan[1] == 28 and 0 < plan[3] < plan[2]
    # each returning user's mean success over its two October sessions, as an exact millionth
    assert stored == {u["user"]: round(u["x"] * 1_000_000) for u in world.units() if u["h"]}
    assert stored["r25"] == 500_000 and stored["r0"] == 1_000_000 and stored["r40"] == 0


def test_the_look_adjusts_the_difference_and_its_variance_and_the_cs_reads_them(warehouse):
    units = world.units()
    v = np.array([float(u["success"]) for u in units])
    t = np.array([1.0 if u["arm"] == "treatment" else 0.0 for u in units])
    x, h = np.array([u["x"] for u in units]), np.array([u["h"] for u in units])
    ols = sm.OLS(v, sm.add_constant(np.column_stack([t, x, h]))).fit()
    r = _look(warehouse)
    assert r["cuped"] is True and r["ci_method"] == "cuped_normal"
    assert r["difference"] == pytest.approx(ols.params[1], rel=1e-9)
    # the paper's variance: each arm's residuals v - theta_x x - theta_h h (ddof 0, as p(1 - p) of a rate)
    resid = v - ols.params[2] * x - ols.params[3] * h
    on = t > 0
    se2 = resid[on].var() / on.sum() + resid[~on].var() / (~on).sum()
    raw = v[on].var() / on.sum() + v[~on].var() / (~on).sum()
    assert r["variance_reduction"] == pytest.approx(1 - se2 / raw, rel=1e-9)
    assert r["variance_reduction"] > 0.1  # the covariate carries the user's group: 14.5% here
    # tonight's confidence sequence: the adjusted difference and variance, tuned at the plan, at the Holm level
    sigma2, n, rho2 = cs_reference(r["difference"], resid[on].var(), on.sum(), resid[~on].var(), (~on).sum(),
                                   r["alpha_share"], 2 * r["planned_n_per_arm"])
    assert r["cs_night_high"] - r["difference"] == pytest.approx(halfwidth(sigma2, n, rho2, r["cs_level"]), rel=1e-9)
    # the descriptive interval: the normal one of the same estimate
    assert r["ci_high"] - r["difference"] == pytest.approx(1.959964 * math.sqrt(se2), rel=1e-6)


def test_the_report_says_how_much_variance_cuped_removed(warehouse):
    r = _look(warehouse)
    result = CliRunner().invoke(main, ["--warehouse", str(warehouse), "report", "--as-of", LAST, "--experiment",
                                       world.EXPERIMENT], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"CUPED (Deng et al. 2013): variance reduced by {r['variance_reduction']:.1%}" in text
    page = next(warehouse.parent.glob("**/look-*.html")).read_text(encoding="utf-8")
    assert f"CUPED (Deng et al. 2013): variance reduced by {r['variance_reduction']:.1%}" in page
