"""The look from per-arm figures: every item of the decision, checked against independent references.

References are computed in the tests from the published formulas (Waudby-Smith et al. 2024 /
Howard et al. 2021 for the confidence sequence, Miettinen and Nurminen 1985 by numerical
maximisation rather than the code's closed form), scipy and statsmodels.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest
from scipy import optimize, stats

from tests.analysis.looks import (
    DAY0,
    NIGHT,
    T0,
    Z80,
    anytime_p,
    binary,
    build,
    continuous,
    cs_reference,
    halfwidth,
    look,
    registration,
    row,
)
from tests.plan_reference import r_reference
from zcl_assets.analysis.engine import analyse
from zcl_assets.stats.srm import SRM_ALPHA


def mn_interval(x1, n1, x2, n2, alpha=0.05):
    """Miettinen-Nurminen (1985) interval by brute force: restricted MLE by numerical likelihood maximisation."""
    p1, p2 = x1 / n1, x2 / n2

    def z(delta):
        lo, hi = max(0.0, delta) + 1e-12, min(1.0, 1 + delta) - 1e-12

        def nll(q1):
            q2 = q1 - delta
            return -(x1 * math.log(q1) + (n1 - x1) * math.log(1 - q1) + x2 * math.log(q2) + (n2 - x2) * math.log(1 - q2))

        q1 = optimize.minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13}).x
        q2 = q1 - delta
        var = (q1 * (1 - q1) / n1 + q2 * (1 - q2) / n2) * (n1 + n2) / (n1 + n2 - 1)
        return (p1 - p2 - delta) / math.sqrt(var)

    zc = stats.norm.isf(alpha / 2)
    d = p1 - p2
    return (optimize.brentq(lambda t: z(t) - zc, -0.999, d, xtol=1e-12),
            optimize.brentq(lambda t: z(t) + zc, d, 0.999, xtol=1e-12))


def test_binary_comparison_unequal_allocation_control_not_named_control():
    # 60/40 allocation, control arm named "baseline"; one night of figures.
    reg = registration("e1", ["treatment", "baseline"], [0.4, 0.6], control="baseline")
    stats_ = [binary("e1", "baseline", NIGHT, 1200, 600), binary("e1", "treatment", NIGHT, 800, 448)]
    r = row(look([reg], stats_, NIGHT), NIGHT)
    assert (r["control_arm"], r["treatment_arm"], r["metric_kind"]) == ("baseline", "treatment", "binary_proportion")
    # Plan (hand calculation): alpha share 0.05 / 4 = 0.0125, ratio r = 0.4 / 0.6,
    # n_fixed = (z_{1-0.0125/2} + z_{0.8})^2 (0.5*0.5 + 0.55*0.45 / r) / 0.05^2, N_plan = ceil(R n_fixed), R at alpha .0125, power .80.
    ratio = 0.4 / 0.6
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * (0.25 + 0.55 * 0.45 / ratio) / 0.05**2
    plan = math.ceil(r_reference(0.0125, 0.8) * n_fixed)
    assert r["alpha_share"] == pytest.approx(0.0125) and r["planned_n_per_arm"] == plan
    assert r["planned_n_treatment"] == math.ceil(plan * ratio)
    # The CS at its Holm step (a family of one: the alpha share), tuned at the planned total.
    p_t, p_c = 448 / 800, 0.5
    sigma2, n, rho2 = cs_reference(p_t - p_c, p_t * (1 - p_t), 800, p_c * (1 - p_c), 1200, 0.0125, plan * (1 + ratio))
    hw = halfwidth(sigma2, n, rho2, 0.0125)
    assert r["difference"] == pytest.approx(0.06, abs=1e-12)
    assert (r["cs_low"], r["cs_high"]) == (pytest.approx(0.06 - hw, rel=1e-9), pytest.approx(0.06 + hw, rel=1e-9))
    assert r["cs_p_value"] == pytest.approx(anytime_p(0.06, sigma2, n, rho2), rel=1e-9)
    assert r["cs_p_adjusted"] == pytest.approx(r["cs_p_value"], rel=1e-12) and r["cs_level"] == pytest.approx(0.0125)
    # Descriptive pair: Miettinen-Nurminen score test (statsmodels agrees at margin 0) and interval.
    from statsmodels.stats.proportion import test_proportions_2indep as score_test

    assert r["p_value"] == pytest.approx(score_test(448, 800, 600, 1200, method="score").pvalue, rel=1e-9)
    lo, hi = mn_interval(448, 800, 600, 1200)
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(lo, abs=1e-7), pytest.approx(hi, abs=1e-7))
    assert r["p_method"] == "miettinen_nurminen_score" and r["fisher_p_value"] is None  # a large table
    # The decision: p = 0.0148 > 0.0125 at 2,000 of 3,600 planned units: still collecting.
    assert r["decision"] == "continue" and r["decision_rule"] == 6
    assert "collecting" in r["decision_reason"] and "includes zero" in r["decision_reason"]


def test_degenerate_variance_gives_no_p_value_and_no_interval():
    # Two constant arms whose exported variance is float noise: no CS, no p, no decision.
    reg = registration("e5", ["control", "treatment"], metric="score", baseline_sd=0.2)
    figures = [continuous("e5", "control", NIGHT, 500, 0.7, 1e-30, exported=True),
               continuous("e5", "treatment", NIGHT, 500, 0.8, 3e-31, exported=True)]
    r = row(look([reg], figures, NIGHT), NIGHT)
    assert r["difference"] == pytest.approx(0.1)
    assert r["cs_low"] is None and r["cs_p_value"] is None and r["p_value"] is None and r["ci_low"] is None
    assert r["decision"] == "continue" and r["decision_reason"].startswith("interval undefined")


def _balanced_nights(eid, split, days, per_day, arms=("control", "treatment"), segment=0, start=DAY0, rate=0.5):
    """Cumulative binary figures night by night for a fixed split of units."""
    out, cum = [], np.zeros(len(arms))
    for k in range(days):
        cum = cum + np.round(np.asarray(split) * per_day)
        day = start + dt.timedelta(days=k)
        out += [binary(eid, a, day, int(c), int(round(c * rate)), segment=segment) for a, c in zip(arms, cum)]
    return out


@pytest.mark.parametrize("arms,shares,counts", [
    (["control", "treatment"], [0.5, 0.5], [4800, 5200]),
    (["control", "b", "c"], [0.5, 0.25, 0.25], [2000, 1000, 1150]),
])
def test_the_issue_s_splits_are_invalid(arms, shares, counts):
    # DESIGN section 6: the sequential SRM (prior tuned at the planned sample) must fire on a
    # 5,200 / 4,800 split of a 50/50 design and on 2,000 / 1,000 / 1,150 of a 50/25/25 design,
    # observed at about the planned total. Chi-square goodness of fit is reported beside it.
    total = sum(counts)
    # MDE chosen so that the plan's total is the observed total (binary 0.5, alpha share 0.0125)
    mde = 0.05 if len(arms) == 2 else 0.09
    reg = registration("srm", arms, shares, mde=mde, min_samples_per_arm=10)
    figures = [binary("srm", a, NIGHT, c, c // 2) for a, c in zip(arms, counts)]
    r = row(look([reg], figures, NIGHT), NIGHT, treatment_arm=arms[1])
    planned_total = r["planned_n_per_arm"] * sum(s / shares[0] for s in shares)
    assert 0.6 * total < planned_total < 1.6 * total
    assert r["srm_fired"] and r["srm_sequential_p"] < SRM_ALPHA
    assert r["decision"] == "invalid" and "sequential SRM fired" in r["decision_reason"]
    assert r["srm_chisquare_p"] == pytest.approx(stats.chisquare(counts, np.asarray(shares) * total).pvalue, rel=1e-9)


def test_a_split_unequal_by_design_with_unknown_allocation_is_not_an_srm():
    # An aggregate export: 30/70 for 20 nights, allocation never declared: constancy holds.
    reg = registration("u1", ["control", "treatment"], "unknown", min_samples_per_arm=10)
    out = look([reg], _balanced_nights("u1", [0.3, 0.7], 20, 5000), DAY0 + dt.timedelta(days=19))
    r = row(out, treatment_arm="treatment")
    assert r["allocation"] == "unknown" and r["srm_test"] == "constancy (allocation unknown)"
    assert not r["srm_fired"] and r["decision"] != "invalid"


def test_an_undeclared_split_that_changes_fires_the_constancy_test():
    reg = registration("u2", ["control", "treatment"], "unknown", min_samples_per_arm=10)
    first = _balanced_nights("u2", [0.5, 0.5], 10, 4000)
    later = []
    base = {(s["arm"]): s["n"] for s in first[-2:]}
    for k in range(10):
        day = DAY0 + dt.timedelta(days=10 + k)
        for arm, share in (("control", 0.45), ("treatment", 0.55)):
            n = base[arm] + int(share * 4000) * (k + 1)
            later.append(binary("u2", arm, day, n, n // 2))
    out = look([reg], first + later, DAY0 + dt.timedelta(days=19))
    r = row(out, treatment_arm="treatment")
    assert r["srm_fired"] and r["decision"] == "invalid"
    assert row(out, DAY0 + dt.timedelta(days=9), treatment_arm="treatment")["decision"] != "invalid"


def test_invalid_is_sticky_until_a_reopened_event():
    # Nights 0-9: 45/55 on a 50/50 design (an SRM). A reopen on night 12 starts a new epoch whose
    # units (assigned from then on, in a new stratum) are balanced.
    reg = registration("s1", ["control", "treatment"], min_samples_per_arm=10)
    figures = _balanced_nights("s1", [0.45, 0.55], 20, 600)
    reopen_day = DAY0 + dt.timedelta(days=12)
    fresh = _balanced_nights("s1", [0.5, 0.5], 8, 600, segment=1, start=reopen_day)
    events = [{"experiment_id": "s1", "status": "reopened", "at": T0 + dt.timedelta(days=12), "reason": "fixed the router",
               "allocation": None}]
    assigned = [{"experiment_id": f["experiment_id"], "arm": f["arm"], "segment": f["segment"], "day": f["day"],
                 "units": f["n"]} for f in figures if f["day"] < reopen_day] + \
        [{"experiment_id": f["experiment_id"], "arm": f["arm"], "segment": 1, "day": f["day"], "units": f["n"]}
         for f in fresh]
    out = look([reg], [f for f in figures if f["day"] < reopen_day] + fresh, DAY0 + dt.timedelta(days=19),
               assigned=assigned, events=events)
    by_night = out.filter(pl.col("is_primary")).sort("as_of")
    fired = by_night.filter(pl.col("decision") == "invalid").get_column("as_of").to_list()
    assert fired and min(fired) < reopen_day
    first_fire = min(fired)
    # sticky: every night from the first fire to the reopen is invalid, whatever the data says
    assert all(d in fired for d in by_night.get_column("as_of").to_list() if first_fire <= d < reopen_day)
    # after the reopen the status is "reopened" and the balanced new epoch is valid again
    after = by_night.filter(pl.col("as_of") >= reopen_day)
    assert after.get_column("status").unique().to_list() == ["reopened"]
    assert (after.get_column("decision") != "invalid").all()


def test_a_declared_allocation_change_is_stratified_and_an_undeclared_one_is_an_srm():
    # 90/10 for 10 nights, then 50/50, declared. The baseline rises from 0.30 to 0.60 between the
    # periods and the treatment does nothing. Pooled, treatment units come mostly from the later,
    # better period: the naive difference is +0.12 with p near 0 (wrong sign of nothing).
    reg = registration("shift", ["control", "treatment"], [0.9, 0.1], min_samples_per_arm=10)
    change = T0 + dt.timedelta(days=10)
    events = [{"experiment_id": "shift", "status": "active", "at": change, "reason": "allocation changed",
               "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    night = DAY0 + dt.timedelta(days=19)
    p1 = [binary("shift", "control", night, 9000, 2700), binary("shift", "treatment", night, 1000, 300)]
    p2 = [binary("shift", "control", night, 5000, 3000, segment=1), binary("shift", "treatment", night, 5000, 3000,
                                                                            segment=1)]
    assigned = [{"experiment_id": "shift", "arm": f["arm"], "segment": f["segment"], "day": night, "units": f["n"]}
                for f in p1 + p2]
    r = row(look([reg], p1 + p2, night, assigned=assigned, events=events, output="last"))
    assert r["periods"] == 2 and r["allocation"] == "declared, changed"
    assert r["difference"] == pytest.approx(0.0, abs=1e-12)  # stratified: 0 in each period
    assert not r["srm_fired"]  # each period matches its declared shares
    from zcl_assets.stats.binary import miettinen_nurminen

    naive = miettinen_nurminen(3300, 6000, 5700, 14000)
    assert naive.diff == pytest.approx(0.55 - 0.407142857, abs=1e-6) and naive.pvalue < 1e-40
    # Undeclared: the same units against the registered 90/10 are a mismatch.
    r2 = row(look([reg], [binary("shift", "control", night, 14000, 5700), binary("shift", "treatment", night, 6000, 3300)],
                  night, output="last"))
    assert r2["srm_fired"] and r2["decision"] == "invalid"


def test_contract_violations_and_drift_make_the_look_invalid():
    reg = registration("v1", ["control", "treatment"], min_samples_per_arm=10)
    figures = [binary("v1", "control", NIGHT, 3000, 1500), binary("v1", "treatment", NIGHT, 3000, 1560)]
    violations = [{"experiment_id": "v1", "epoch": 0, "day": DAY0 + dt.timedelta(days=k), "bad": 40, "total": 400}
                  for k in range(10)]
    r = row(look([reg], figures, NIGHT, violations=violations), NIGHT)
    assert r["decision"] == "invalid" and "contract violations exceed 5%" in r["decision_reason"]
    assert r["contract_violation_share"] == pytest.approx(0.10)
    drift = [{"experiment_id": "v1", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    r = row(look([reg], figures, NIGHT, drift=drift), NIGHT)
    assert r["decision"] == "invalid" and r["baseline_drift"] and "drifted" in r["decision_reason"]
    fine = [{"experiment_id": "v1", "epoch": 0, "day": DAY0, "bad": 3, "total": 4000}]
    assert row(look([reg], figures, NIGHT, violations=fine), NIGHT)["decision"] != "invalid"


def test_every_other_column_of_a_plain_binary_comparison_by_hand():
    # the 60/40 comparison of the first test: 600 / 1,200 against 448 / 800, exactly on its split
    reg = registration("e1", ["treatment", "baseline"], [0.4, 0.6], control="baseline")
    r = row(look([reg], [binary("e1", "baseline", NIGHT, 1200, 600), binary("e1", "treatment", NIGHT, 800, 448)], NIGHT),
            NIGHT)
    assert {k: r[k] for k in ("experiment_id", "metric", "role", "is_primary", "direction", "analysis_unit", "source",
                              "allocation", "srm_test", "status", "periods", "family_size", "n_control",
                              "n_treatment", "successes_control", "successes_treatment", "srm_units_control",
                              "srm_units_treatment", "users_in_both_arms", "srm_fired", "baseline_drift",
                              "invalid_since", "contract_violation_share", "interval_test_disagree",
                              "ci_method")} == {
        "experiment_id": "e1", "metric": "success", "role": "primary", "is_primary": True, "direction": "increase",
        "analysis_unit": "session", "source": "sessions", "allocation": "declared",
        "srm_test": "known allocation (Lindon-Malek)", "status": "registered", "periods": 1, "family_size": 1,
        "n_control": 1200, "n_treatment": 800, "successes_control": 600, "successes_treatment": 448,
        "srm_units_control": 1200, "srm_units_treatment": 800, "users_in_both_arms": 0, "srm_fired": False,
        "baseline_drift": False, "invalid_since": None, "contract_violation_share": None,
        "interval_test_disagree": False, "ci_method": "miettinen_nurminen_score",
    }
    assert (r["mean_control"], r["mean_treatment"]) == (pytest.approx(0.5), pytest.approx(0.56))
    assert (r["variance_control"], r["variance_treatment"]) == (pytest.approx(0.25), pytest.approx(0.56 * 0.44))
    assert r["verified_share"] == pytest.approx(1.0)
    # relative lift 0.56 / 0.5 - 1 with the log-scale delta-method interval (Kohavi, Tang and Xu 2020)
    se = math.sqrt(0.56 * 0.44 / (800 * 0.56**2) + 0.25 / (1200 * 0.25))
    z = stats.norm.isf(0.025)
    assert r["relative_lift"] == pytest.approx(0.12, rel=1e-12)
    assert (r["lift_ci_low"], r["lift_ci_high"]) == (pytest.approx(1.12 * math.exp(-z * se) - 1, rel=1e-9),
                                                     pytest.approx(1.12 * math.exp(z * se) - 1, rel=1e-9))
    # the SRM chi-square of 1,200 / 800 against 60/40 is 0 (p = 1)
    assert r["srm_chisquare_p"] == pytest.approx(1.0)


def test_the_look_does_not_depend_on_the_order_of_its_night_rows():
    # Two strata (a declared change from 90/10 to 50/50 on day 10), figures on nights 0 and 19,
    # the look's nights handed over in reverse order. On night 19 (Cochran 1977, weights by
    # units, 10,000 units in each period): period 1 0.40 - 0.30 = 0.10, period 2
    # 0.65 - 0.60 = 0.05, stratified 0.5 * 0.10 + 0.5 * 0.05 = 0.075. On night 0 only period 1
    # has units: 40 / 100 against 270 / 900, 0.40 - 0.30 = 0.10.
    reg = registration("rev", ["control", "treatment"], [0.9, 0.1], min_samples_per_arm=10)
    events = [{"experiment_id": "rev", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    last = DAY0 + dt.timedelta(days=19)
    figures = [binary("rev", "control", DAY0, 900, 270), binary("rev", "treatment", DAY0, 100, 40),
               binary("rev", "control", last, 9000, 2700), binary("rev", "treatment", last, 1000, 400),
               binary("rev", "control", last, 5000, 3000, segment=1),
               binary("rev", "treatment", last, 5000, 3250, segment=1)]
    inputs = build([reg], figures, last, events=events)
    out = analyse(inputs._replace(looks=inputs.looks.reverse()))
    assert out.height == 20 and out.get_column("as_of").n_unique() == 20  # one row a night
    r = row(out, last)
    assert (r["periods"], r["n_control"], r["n_treatment"]) == (2, 14000, 6000)
    assert r["difference"] == pytest.approx(0.075, abs=1e-12)
    first = row(out, DAY0)
    assert (first["periods"], first["difference"]) == (1, pytest.approx(0.10, abs=1e-12))
