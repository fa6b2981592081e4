"""The look from per-arm figures: every item of the decision, checked against independent references.

References are computed in the tests from the published formulas (Waudby-Smith et al. 2024 /
Howard et al. 2021 for the confidence sequence, Miettinen and Nurminen 1985 by numerical
maximisation rather than the code's closed form), scipy and statsmodels.
"""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np
import polars as pl
import pytest
from scipy import optimize, stats
from statsmodels.stats.multitest import multipletests

from tests.analysis.looks import DAY0, T0, binary, build, continuous, look, registration, row
from zcl_assets.analysis.engine import analyse
from zcl_assets.stats.srm import SRM_ALPHA

Z80 = stats.norm.ppf(0.8)
NIGHT = DAY0 + dt.timedelta(days=20)


def cs_reference(diff, v_t, n_t, v_c, n_c, alpha, n_star):
    """Normal-mixture CS half-width and anytime p (Howard et al. 2021 Sec 3.5; Waudby-Smith et al. 2024)."""
    n = n_t + n_c
    sigma2 = n * (v_t / n_t + v_c / n_c)
    tuning = -2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))
    return sigma2, n, tuning / n_star


def halfwidth(sigma2, n, rho2, level):
    return math.sqrt(sigma2 * 2 * (n * rho2 + 1) / (n * n * rho2) * math.log(math.sqrt(n * rho2 + 1) / level))


def anytime_p(diff, sigma2, n, rho2):
    return min(1.0, math.sqrt(n * rho2 + 1) * math.exp(-diff**2 * n * n * rho2 / (2 * sigma2 * (n * rho2 + 1))))


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
    # n_fixed = (z_{1-0.0125/2} + z_{0.8})^2 (0.5*0.5 + 0.55*0.45 / r) / 0.05^2, N_plan = ceil(1.73 n_fixed).
    ratio = 0.4 / 0.6
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * (0.25 + 0.55 * 0.45 / ratio) / 0.05**2
    plan = math.ceil(1.73 * n_fixed)
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


def test_small_table_reports_fisher_beside_the_score_test_and_flags_disagreement():
    # 12 units per arm: an expected cell below 5, so Fisher's exact test is reported too.
    reg = registration("e1", ["control", "treatment"], min_samples_per_arm=5)
    r = row(look([reg], [binary("e1", "control", NIGHT, 12, 2), binary("e1", "treatment", NIGHT, 12, 7)], NIGHT), NIGHT)
    table = [[7, 5], [2, 10]]
    assert r["fisher_p_value"] == pytest.approx(stats.fisher_exact(table).pvalue, rel=1e-9)
    from scipy.stats.contingency import odds_ratio

    ref = odds_ratio(table, kind="conditional")
    assert r["fisher_odds_ratio"] == pytest.approx(ref.statistic, rel=1e-6)
    ci = ref.confidence_interval(0.95)
    assert (r["fisher_or_ci_low"], r["fisher_or_ci_high"]) == (pytest.approx(ci.low, rel=1e-6), pytest.approx(ci.high, rel=1e-6))
    # the score interval excludes zero while Fisher's p (0.089) does not reject: flagged, not hidden
    assert r["ci_low"] > 0 and r["fisher_p_value"] > 0.05 and r["interval_test_disagree"]


def test_three_arms_holm_over_anytime_p_values_and_the_cs_read_at_each_step():
    # 50/25/25 with the control named "baseline"; both treatments beneficial, one strongly.
    reg = registration("e3", ["baseline", "a", "b"], [0.5, 0.25, 0.25], control="baseline")
    figures = [binary("e3", "baseline", NIGHT, 4000, 1600), binary("e3", "a", NIGHT, 2000, 960),
               binary("e3", "b", NIGHT, 2000, 870)]
    out = look([reg], figures, NIGHT)
    a, b = row(out, NIGHT, treatment_arm="a"), row(out, NIGHT, treatment_arm="b")
    raw = [a["cs_p_value"], b["cs_p_value"]]
    _, adjusted, _, _ = multipletests(raw, method="holm")
    assert [a["cs_p_adjusted"], b["cs_p_adjusted"]] == [pytest.approx(x, rel=1e-12) for x in adjusted]
    assert a["family_size"] == b["family_size"] == 2
    # The plan and the CS tuning use alpha_share / 2; Holm reads the smaller p at 0.0125 / 2 and,
    # once it rejects, the other at 0.0125 (Holm 1979).
    assert a["cs_p_value"] < b["cs_p_value"]
    assert a["cs_level"] == pytest.approx(0.0125 / 2)
    assert b["cs_level"] == pytest.approx(0.0125 if a["cs_p_value"] < 0.0125 / 2 else 0.0125 / 2)
    for r in (a, b):  # a CS read at its step excludes zero exactly when Holm rejects
        assert (r["cs_low"] > 0) == (r["cs_p_adjusted"] < 0.0125)
        assert (r["decision"] == "adopt") == (r["cs_p_adjusted"] < 0.0125)


def test_an_undefined_p_counts_as_one_in_the_holm_family():
    # Arm "b" has units but its variance is missing: its p is undefined tonight, and it still
    # takes its place in the family.
    reg = registration("e4", ["control", "a", "b"], metric="score", baseline_sd=0.2)
    out = look([reg], [continuous("e4", "control", NIGHT, 3000, 0.60, 0.04), continuous("e4", "a", NIGHT, 3000, 0.63, 0.04),
                       continuous("e4", "b", NIGHT, 3000, 0.61, None, exported=True)], NIGHT)
    a, b = row(out, NIGHT, treatment_arm="a"), row(out, NIGHT, treatment_arm="b")
    assert b["cs_p_value"] is None and b["decision"] == "continue" and b["decision_reason"].startswith("interval undefined")
    # Holm with p_b counted as 1: adjusted p_a = min(1, 2 p_a) (R: p.adjust(c(p, 1), "holm")).
    assert a["family_size"] == 2
    assert a["cs_p_adjusted"] == pytest.approx(min(1.0, 2 * a["cs_p_value"]), rel=1e-12)
    assert a["cs_level"] == pytest.approx(0.0125 / 2)


def test_a_comparison_without_analysable_units_is_reported_not_dropped():
    reg = registration("e8", ["control", "a", "b"])
    night = DAY0 + dt.timedelta(days=1)
    out = look([reg], [binary("e8", "control", night, 3, 1), binary("e8", "a", night, 2, 1)], night)
    b = row(out, night, treatment_arm="b")
    assert b["n_treatment"] == 0 and b["decision"] == "continue" and b["decision_rule"] == 2
    assert "no analysable units" in b["decision_reason"] and b["cs_p_value"] is None


def test_degenerate_variance_gives_no_p_value_and_no_interval():
    # Two constant arms whose exported variance is float noise: no CS, no p, no decision.
    reg = registration("e5", ["control", "treatment"], metric="score", baseline_sd=0.2)
    figures = [continuous("e5", "control", NIGHT, 500, 0.7, 1e-30, exported=True),
               continuous("e5", "treatment", NIGHT, 500, 0.8, 3e-31, exported=True)]
    r = row(look([reg], figures, NIGHT), NIGHT)
    assert r["difference"] == pytest.approx(0.1)
    assert r["cs_low"] is None and r["cs_p_value"] is None and r["p_value"] is None and r["ci_low"] is None
    assert r["decision"] == "continue" and r["decision_reason"].startswith("interval undefined")


def test_read_only_arrays_from_polars_do_not_crash_the_look():
    reg = registration("e6", ["control", "treatment"], metric="score", baseline_sd=0.2)
    inputs = build([reg], [continuous("e6", "control", NIGHT, 300, 0.6, 0.04),
                           continuous("e6", "treatment", NIGHT, 300, 0.65, 0.04)], NIGHT)
    # polars hands out read-only views of numeric columns without nulls
    assert not inputs.arm_stats.get_column("n").to_numpy().flags.writeable
    frame = analyse(inputs)
    r = row(frame, NIGHT)
    welch = stats.ttest_ind_from_stats(0.65, 0.2, 300, 0.6, 0.2, 300, equal_var=False)
    assert r["p_value"] == pytest.approx(welch.pvalue, rel=1e-9) and r["p_method"] == "welch_t"


def test_binary_cs_is_clipped_to_minus_one_one():
    reg = registration("e7", ["control", "treatment"], min_samples_per_arm=10, mde=0.3, baseline_mean=0.3)
    r = row(look([reg], [binary("e7", "control", NIGHT, 20, 2), binary("e7", "treatment", NIGHT, 20, 19)], NIGHT), NIGHT)
    assert -1.0 <= r["cs_low"] and r["cs_high"] == 1.0  # unclipped it would exceed 1


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


def test_guardrail_harm_holds_adopt_and_names_the_guardrail():
    guard = '[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]'
    reg = registration("g1", ["control", "treatment"], guardrails=guard)
    harmed = [binary("g1", "control", NIGHT, 5000, 2500), binary("g1", "treatment", NIGHT, 5000, 2800),
              continuous("g1", "control", NIGHT, 5000, 15000.0, 6000.0**2, metric="tokens"),
              continuous("g1", "treatment", NIGHT, 5000, 16500.0, 6000.0**2, metric="tokens")]
    out = look([reg], harmed, NIGHT)
    r = row(out, NIGHT, role="primary")
    assert r["cs_low"] > 0 and r["decision"] == "continue" and r["decision_rule"] == 4
    assert "held by guardrail tokens" in r["decision_reason"]
    g = row(out, NIGHT, role="guardrail")
    # tokens is a decrease metric: the beneficial-direction lower end is -cs_high, below -500
    assert -g["cs_high"] < -500 and "tokens: not shown non-inferior" in r["guardrail_status"]
    fine = harmed[:2] + [continuous("g1", "control", NIGHT, 5000, 15000.0, 600.0**2, metric="tokens"),
                         continuous("g1", "treatment", NIGHT, 5000, 15010.0, 600.0**2, metric="tokens")]
    r2 = row(look([reg], fine, NIGHT), NIGHT, role="primary")
    assert r2["decision"] == "adopt" and "tokens: non-inferior" in r2["guardrail_status"]


def test_an_unreachable_plan_gets_a_valid_cs_at_the_fallback_tuning_and_says_why():
    # baseline 0.97 + MDE 0.05 leaves (0, 1): no plan. The CS is tuned at 5,000 units and only
    # adopt or reject can end the experiment, however large it grows.
    reg = registration("u", ["control", "treatment"], baseline_mean=0.97, mde=0.05)
    figures = [binary("u", "control", NIGHT, 40000, 38800), binary("u", "treatment", NIGHT, 40000, 38810)]
    r = row(look([reg], figures, NIGHT), NIGHT)
    assert r["plan_reachable"] is False and r["planned_n_per_arm"] == math.inf
    assert "baseline plus MDE not in (0, 1)" in r["plan_reason"] and "5,000 units" in r["plan_reason"]
    p_t, p_c = 38810 / 40000, 0.97
    sigma2, n, rho2 = cs_reference(p_t - p_c, p_t * (1 - p_t), 40000, p_c * (1 - p_c), 40000, 0.0125, 5000.0)
    assert r["cs_high"] - r["difference"] == pytest.approx(halfwidth(sigma2, n, rho2, 0.0125), rel=1e-9)
    assert r["decision"] == "continue" and "only adopt or reject can end it" in r["decision_reason"]


def test_progress_figures_and_a_verified_share_below_one():
    # 2,000 units assigned per arm over 10 days, 1,700 of them with a verified outcome.
    reg = registration("p1", ["control", "treatment"], expected_verified_share=0.85, baseline_sd=None)
    night = DAY0 + dt.timedelta(days=9)
    figures = [binary("p1", "control", night, 1700, 850), binary("p1", "treatment", night, 1700, 900)]
    assigned = [{"experiment_id": "p1", "arm": a, "segment": 0, "day": night, "units": 2000} for a in ("control", "treatment")]
    r = row(look([reg], figures, night, assigned=assigned), night)
    assert r["verified_share"] == pytest.approx(0.85)
    plan = r["planned_n_per_arm"]
    # plan = ceil(1.73 n_fixed / 0.85) (registered verified share)
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * (0.25 + 0.55 * 0.45) / 0.05**2
    assert plan == math.ceil(1.73 * n_fixed / 0.85)
    assert r["information_fraction"] == pytest.approx(2000 / plan)
    # 10 days since the first assignment at 00:00 of the first day: 200 units a day an arm
    assert r["days_since_first_assignment"] == pytest.approx(10.0)
    assert r["days_to_plan"] == math.ceil((plan - 2000) / 200)
    from zcl_assets.stats.power import power_at

    assert r["power_at_mde"] == pytest.approx(float(power_at(1700, 0.05, 0.5, 0.0125)), rel=1e-12)


def test_burn_in_binary_counts_and_days():
    reg = registration("b1", ["control", "treatment"], min_samples_per_arm=10)
    early = row(look([reg], [binary("b1", "control", DAY0 + dt.timedelta(days=3), 500, 250),
                             binary("b1", "treatment", DAY0 + dt.timedelta(days=3), 500, 400)],
                     DAY0 + dt.timedelta(days=3)))
    assert early["decision"] == "continue" and "7 days" in early["decision_reason"]
    few = row(look([reg], [binary("b1", "control", NIGHT, 500, 5), binary("b1", "treatment", NIGHT, 500, 60)], NIGHT), NIGHT)
    assert few["decision"] == "continue" and "10 successes or failures" in few["decision_reason"]


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


def test_a_refused_registration_is_invalid_with_its_reason():
    from zcl_assets.analysis.registration import RegistrationPolicy

    regs = [registration(f"f{i}", ["control", "treatment"], task_type="shared",
                         registered_at=T0 + dt.timedelta(hours=i)) for i in range(3)]
    figures = [binary(f"f{i}", a, NIGHT, 3000, 1500) for i in range(3) for a in ("control", "treatment")]
    out = look(regs, figures, NIGHT, policy=RegistrationPolicy(alpha_slots=2))
    third = row(out, NIGHT, experiment_id="f2")
    assert third["decision"] == "invalid" and "registration refused" in third["decision_reason"]
    assert row(out, NIGHT, experiment_id="f0")["alpha_share"] == pytest.approx(0.025)


def _arm_figures(eid, arm, day, values, segment, metric="score"):
    """Cumulative continuous figures of an arm from its unit values (sum and centred sum of squares)."""
    v = np.asarray(values, float)
    return {"experiment_id": eid, "metric": metric, "arm": arm, "segment": segment, "day": day, "n": v.size,
            "sum_v": float(v.sum()), "m2_v": float(((v - v.mean()) ** 2).sum()), "variance": None, "successes": None,
            "observations": float(v.size), "sum_y": None, "sum_m": None, "c_yy": None, "c_mm": None, "c_ym": None}


def test_a_stratified_comparison_of_two_periods_against_a_hand_computed_normal_test():
    # 80/20 for ten nights, then 50/50 (declared). Unit values drawn once; each period has its
    # own effect (+0.04, then +0.01) and its own baseline. Reference (Cochran 1977, stratified
    # estimator with weights proportional to units): diff = sum w_s (mean_t,s - mean_c,s),
    # se^2 = sum w_s^2 (s2_t,s / n_t,s + s2_c,s / n_c,s), w_s = units_s / units, two-sided
    # normal p-value and 95% interval. Pooled arm figures: the mean and the sample variance
    # (ddof 1) of the concatenated values (numpy), the CS at sigma^2 = N se^2.
    rng = np.random.default_rng(20261130)
    reg = registration("st", ["control", "treatment"], [0.8, 0.2], metric="score", baseline_sd=0.2,
                       baseline_mean=0.5, min_samples_per_arm=10)
    change = T0 + dt.timedelta(days=10)
    events = [{"experiment_id": "st", "status": "active", "at": change, "reason": "allocation changed",
               "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    night = DAY0 + dt.timedelta(days=19)
    data = {("control", 0): rng.normal(0.50, 0.20, 800), ("treatment", 0): rng.normal(0.54, 0.25, 200),
            ("control", 1): rng.normal(0.60, 0.15, 500), ("treatment", 1): rng.normal(0.61, 0.18, 500)}
    figures = [_arm_figures("st", a, night, v, s) for (a, s), v in data.items()]
    assigned = [{"experiment_id": "st", "arm": f["arm"], "segment": f["segment"], "day": night, "units": f["n"]}
                for f in figures]
    r = row(look([reg], figures, night, assigned=assigned, events=events, output="last"))
    assert r["periods"] == 2 and r["ci_method"] == r["p_method"] == "stratified_normal"
    total = sum(v.size for v in data.values())
    diff = se2 = 0.0
    for s in (0, 1):
        t, c = data[("treatment", s)], data[("control", s)]
        w = (t.size + c.size) / total
        diff += w * (t.mean() - c.mean())
        se2 += w**2 * (t.var(ddof=1) / t.size + c.var(ddof=1) / c.size)
    se = math.sqrt(se2)
    z = stats.norm.isf(0.025)
    assert r["difference"] == pytest.approx(diff, rel=1e-10)
    assert r["p_value"] == pytest.approx(2 * stats.norm.sf(abs(diff) / se), rel=1e-9)
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(diff - z * se, rel=1e-9), pytest.approx(diff + z * se, rel=1e-9))
    pooled_t = np.concatenate([data[("treatment", 0)], data[("treatment", 1)]])
    pooled_c = np.concatenate([data[("control", 0)], data[("control", 1)]])
    assert (r["n_treatment"], r["n_control"]) == (700, 1300)
    assert r["mean_treatment"] == pytest.approx(pooled_t.mean(), rel=1e-12)
    assert r["mean_control"] == pytest.approx(pooled_c.mean(), rel=1e-12)
    assert r["variance_treatment"] == pytest.approx(pooled_t.var(ddof=1), rel=1e-9)
    assert r["variance_control"] == pytest.approx(pooled_c.var(ddof=1), rel=1e-9)
    # relative lift of the pooled means, log-scale delta method (Kohavi, Tang and Xu 2020, ch. 18)
    mt, mc = pooled_t.mean(), pooled_c.mean()
    se_log = math.sqrt(pooled_t.var(ddof=1) / (700 * mt**2) + pooled_c.var(ddof=1) / (1300 * mc**2))
    assert r["relative_lift"] == pytest.approx(mt / mc - 1, rel=1e-12)
    assert r["lift_ci_low"] == pytest.approx(math.exp(math.log(mt / mc) - z * se_log) - 1, rel=1e-9)
    assert r["lift_ci_high"] == pytest.approx(math.exp(math.log(mt / mc) + z * se_log) - 1, rel=1e-9)
    # the confidence sequence of the stratified estimate, tuned at the planned total (registered
    # ratio 0.2 / 0.8 treatment units per control unit)
    n_star = r["planned_n_per_arm"] * (1 + 0.25)
    rho2 = (-2 * math.log(0.0125) + math.log(1 - 2 * math.log(0.0125))) / n_star
    sigma2 = total * se2
    assert r["cs_p_value"] == pytest.approx(anytime_p(diff, sigma2, total, rho2), rel=1e-9)
    hw = halfwidth(sigma2, total, rho2, r["cs_level"])
    assert (r["cs_low"], r["cs_high"]) == (pytest.approx(diff - hw, rel=1e-9), pytest.approx(diff + hw, rel=1e-9))
    # the descriptive interval and its test agree (both come from the same normal statistic)
    assert r["interval_test_disagree"] is False


def _user_figures(eid, arm, day, y, m, segment=0, metric="score"):
    """Cumulative figures of a user-randomized arm from per-user sums ``y`` and session counts ``m``."""
    y, m = np.asarray(y, float), np.asarray(m, float)
    u = y / m  # per-user means
    return {"experiment_id": eid, "metric": metric, "arm": arm, "segment": segment, "day": day, "n": y.size,
            "sum_v": float(u.sum()), "m2_v": float(((u - u.mean()) ** 2).sum()), "variance": None, "successes": None,
            "observations": float(m.sum()), "sum_y": float(y.sum()), "sum_m": float(m.sum()),
            "c_yy": float(((y - y.mean()) ** 2).sum()), "c_mm": float(((m - m.mean()) ** 2).sum()),
            "c_ym": float(((y - y.mean()) * (m - m.mean())).sum())}


def _delta_ratio(y, m):
    """Ratio of sums and its delta-method variance (Deng, Lu and Litz 2018, eq. for the ratio of means)."""
    r = y.sum() / m.sum()
    var = (np.var(y, ddof=1) - 2 * r * np.cov(y, m)[0, 1] + r * r * np.var(m, ddof=1)) / (y.size * m.mean() ** 2)
    return r, var


def _users(rng, n, level):
    m = rng.integers(1, 6, n).astype(float)
    return m * level + rng.normal(0, 0.3, n) * np.sqrt(m), m


def test_the_session_weighted_ratio_of_a_user_randomized_experiment_by_the_delta_method():
    rng = np.random.default_rng(7)
    reg = registration("ur", ["control", "treatment"], metric="score", baseline_sd=0.3, randomization_unit="user",
                       sessions_per_unit="many", min_samples_per_arm=10)
    (yt, mt), (yc, mc) = _users(rng, 300, 0.56), _users(rng, 400, 0.50)
    figures = [_user_figures("ur", "treatment", NIGHT, yt, mt), _user_figures("ur", "control", NIGHT, yc, mc)]
    out = look([reg], figures, NIGHT)
    ratio = row(out, NIGHT, metric_kind="ratio_of_sums")
    per_user = row(out, NIGHT, metric_kind="continuous_mean")
    assert (ratio["role"], per_user["role"]) == ("secondary", "primary")
    (r_t, v_t), (r_c, v_c) = _delta_ratio(yt, mt), _delta_ratio(yc, mc)
    assert ratio["mean_treatment"] == pytest.approx(r_t, rel=1e-12)
    assert ratio["mean_control"] == pytest.approx(r_c, rel=1e-12)
    # the CS uses n times the delta-method variance of each arm
    assert ratio["variance_treatment"] == pytest.approx(300 * v_t, rel=1e-9)
    assert ratio["variance_control"] == pytest.approx(400 * v_c, rel=1e-9)
    se = math.sqrt(v_t + v_c)
    z = stats.norm.isf(0.025)
    assert ratio["difference"] == pytest.approx(r_t - r_c, rel=1e-12)
    assert (ratio["ci_low"], ratio["ci_high"]) == (pytest.approx(r_t - r_c - z * se, rel=1e-9),
                                                   pytest.approx(r_t - r_c + z * se, rel=1e-9))
    assert ratio["p_value"] == pytest.approx(2 * stats.norm.sf(abs(r_t - r_c) / se), rel=1e-9)
    assert (ratio["ci_method"], ratio["p_method"]) == ("delta_method_per_user_sums", "delta_method_z")
    # the primary per-user mean: Welch on the users' means (scipy)
    ut, uc = yt / mt, yc / mc
    welch = stats.ttest_ind(ut, uc, equal_var=False)
    assert per_user["difference"] == pytest.approx(ut.mean() - uc.mean(), rel=1e-10)
    assert per_user["p_value"] == pytest.approx(welch.pvalue, rel=1e-8)


def test_a_ratio_with_a_missing_sum_in_one_period_is_undefined_and_an_empty_period_does_not_count():
    # Two periods (a declared allocation change). Each period is one set of users; the pooled
    # ratio is sum Y / sum M over both periods' users, its variance that of the concatenated users.
    rng = np.random.default_rng(11)
    reg = registration("ur2", ["control", "treatment"], metric="score", baseline_sd=0.3, randomization_unit="user",
                       sessions_per_unit="many", min_samples_per_arm=10)
    events = [{"experiment_id": "ur2", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    users = {(a, s): _users(rng, 150 + 50 * s, 0.5 + 0.04 * (a == "treatment")) for a in ("control", "treatment")
             for s in (0, 1)}
    figures = [_user_figures("ur2", a, NIGHT, y, m, segment=s) for (a, s), (y, m) in users.items()]
    assigned = [{"experiment_id": "ur2", "arm": f["arm"], "segment": f["segment"], "day": NIGHT, "units": f["n"]}
                for f in figures]

    def ratio_row(figs):
        return row(look([reg], figs, NIGHT, assigned=assigned, events=events, output="last"), metric_kind="ratio_of_sums")

    both = ratio_row(figures)
    for arm, column in (("treatment", "mean_treatment"), ("control", "mean_control")):
        y = np.concatenate([users[(arm, 0)][0], users[(arm, 1)][0]])
        m = np.concatenate([users[(arm, 0)][1], users[(arm, 1)][1]])
        r, v = _delta_ratio(y, m)
        assert both[column] == pytest.approx(r, rel=1e-12)
        assert both[column.replace("mean", "variance")] == pytest.approx(y.size * v, rel=1e-9)
    # the treatment's first-period sums are missing (NaN) while it has units: the pooled ratio
    # is undefined, not the second period's ratio alone
    broken = [dict(f, sum_y=float("nan")) if (f["arm"], f["segment"]) == ("treatment", 0) else f for f in figures]
    r = ratio_row(broken)
    assert r["mean_treatment"] is None and r["variance_treatment"] is None
    assert r["mean_control"] == pytest.approx(both["mean_control"], rel=1e-12)
    # a period without units whose sums are NaN leaves the ratio of the other period
    empty = [dict(f, n=0, sum_v=0.0, m2_v=0.0, observations=0.0, sum_y=float("nan"), sum_m=float("nan"), c_yy=0.0,
                  c_mm=0.0, c_ym=0.0) if (f["arm"], f["segment"]) == ("treatment", 0) else f for f in figures]
    r = ratio_row(empty)
    y1, m1 = users[("treatment", 1)]
    assert r["n_treatment"] == 200
    assert r["mean_treatment"] == pytest.approx(y1.sum() / m1.sum(), rel=1e-12)
    assert r["variance_treatment"] == pytest.approx(200 * _delta_ratio(y1, m1)[1], rel=1e-9)


def test_a_period_in_which_one_arm_has_no_units_is_left_out_of_the_estimate():
    # Two periods; the treatment has no analysable units in the first (its figures never came),
    # so only the second period is a stratum: its difference is the estimate.
    reg = registration("gap", ["control", "treatment"], [0.9, 0.1], min_samples_per_arm=10)
    events = [{"experiment_id": "gap", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    night = DAY0 + dt.timedelta(days=19)
    figures = [binary("gap", "control", night, 900, 270),
               binary("gap", "control", night, 500, 300, segment=1), binary("gap", "treatment", night, 500, 330, segment=1)]
    r = row(look([reg], figures, night, events=events, output="last"))
    assert r["periods"] == 1
    assert r["difference"] == pytest.approx(330 / 500 - 300 / 500, abs=1e-12)
    # the same with the control missing in the first period
    mirrored = [binary("gap", "treatment", night, 100, 70)] + figures[1:]
    r = row(look([reg], mirrored, night, events=events, output="last"))
    assert r["periods"] == 1 and r["difference"] == pytest.approx(0.06, abs=1e-12)
    # and a comparison whose treatment never had units has no period at all
    none = row(look([reg], figures[:2], night, events=events, output="last"))
    assert none["periods"] == 0 and none["difference"] is None and none["n_treatment"] == 0


def _sig(x, digits=4):
    """A figure as the reasons print it: rounded to ``digits`` significant figures, shortest form."""
    text = repr(float(f"{x:.{digits}g}"))
    return re.sub(r"e([-+])0*(\d)", lambda m: "e" + m[1].replace("+", "") + m[2], text)


def _binary_cs(x_t, n_t, x_c, n_c, level=0.0125, alpha=0.0125, mde=0.05, baseline=0.5, power=0.8):
    """CS ends and anytime p of a 50/50 binary comparison, tuned at its plan (hand formulas above)."""
    n_fixed = (stats.norm.isf(alpha / 2) + stats.norm.ppf(power)) ** 2 * (baseline * (1 - baseline) + (baseline + mde) * (1 - baseline - mde)) \
        / mde**2
    plan = math.ceil(1.73 * n_fixed)
    p_t, p_c = x_t / n_t, x_c / n_c
    sigma2, n, rho2 = cs_reference(p_t - p_c, p_t * (1 - p_t), n_t, p_c * (1 - p_c), n_c, alpha, 2 * plan)
    hw = halfwidth(sigma2, n, rho2, level)
    return p_t - p_c - hw, p_t - p_c + hw, anytime_p(p_t - p_c, sigma2, n, rho2), plan


def test_every_template_of_the_reason_in_words_with_its_figures():
    # Each reason written out in full; its figures from the reference formulas of this file.
    reg = registration("w", ["control", "treatment"], min_samples_per_arm=10)
    cs = "the 98.75% confidence sequence [{}, {}]"
    padj = "Holm-adjusted anytime-valid p = {} against alpha share 0.0125"

    def reason(figures, night=NIGHT, **kw):
        return row(look([reg], figures, night, **kw), night)["decision_reason"]

    # reject: 2,000 / 5,000 against 2,500 / 5,000
    lo, hi, p, plan = _binary_cs(2000, 5000, 2500, 5000)
    assert plan == 3839
    assert reason([binary("w", "control", NIGHT, 5000, 2500), binary("w", "treatment", NIGHT, 5000, 2000)]) == (
        f"{cs.format(_sig(lo), _sig(hi))} lies entirely on the harmful side of zero ({padj.format(_sig(p, 3))})")
    # adopt, no guardrails
    lo, hi, p, _ = _binary_cs(2800, 5000, 2500, 5000)
    assert reason([binary("w", "control", NIGHT, 5000, 2500), binary("w", "treatment", NIGHT, 5000, 2800)]) == (
        f"{cs.format(_sig(lo), _sig(hi))} lies entirely on the beneficial side of zero ({padj.format(_sig(p, 3))})")
    # no effect: 6,000 a side is past the planned 3,839, the CS inside (-0.05, 0.05)
    lo, hi, _, _ = _binary_cs(3030, 6000, 3000, 6000)
    assert reason([binary("w", "control", NIGHT, 6000, 3000), binary("w", "treatment", NIGHT, 6000, 3030)]) == (
        f"planned sample reached; {cs.format(_sig(lo), _sig(hi))} lies inside (-MDE, +MDE) = (-0.05, 0.05)")
    # inconclusive: past the plan, the CS includes zero and reaches beyond the MDE
    lo, hi, _, _ = _binary_cs(2120, 4000, 2000, 4000)
    assert lo < 0 < 0.05 < hi
    assert reason([binary("w", "control", NIGHT, 4000, 2000), binary("w", "treatment", NIGHT, 4000, 2120)]) == (
        f"planned sample reached; {cs.format(_sig(lo), _sig(hi))} neither excludes zero nor lies inside (-0.05, 0.05)")
    # collecting: 3,700 of 3,839 a side after 21 days (176.2 a day: 139 / 176.2 -> 1 more day)
    lo, hi, _, _ = _binary_cs(1930, 3700, 1850, 3700)
    assert reason([binary("w", "control", NIGHT, 3700, 1850), binary("w", "treatment", NIGHT, 3700, 1930)]) == (
        f"collecting: 96% of the planned sample, about 1 more days at the current traffic; "
        f"{cs.format(_sig(lo), _sig(hi))} includes zero")
    # burn-in: day 3 of the first assignment, 4.0 days since it at the end of the night
    day3 = DAY0 + dt.timedelta(days=3)
    assert reason([binary("w", "control", day3, 500, 250), binary("w", "treatment", day3, 430, 300)], day3) == (
        "burn-in: fewer than 7 days since first assignment (units 500 / 430; 4.0 days since the first assignment)")
    # invalid since the drift day, sticky
    drift = [{"experiment_id": "w", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    assert reason([binary("w", "control", NIGHT, 3000, 1500), binary("w", "treatment", NIGHT, 3000, 1560)],
                  drift=drift) == (
        "invalid since 2026-10-06: the control arm's context digest drifted (sticky until a reopened event)")
    # a guardrail: tokens may rise by at most 500 (its CS read at the comparison's alpha, 0.0125,
    # on the same tuning); shown non-inferior, adopt; harmed, adopt is held and says why. The
    # plan splits the type II error over the primary and the guardrail: power 1 - 0.2 / 2 each.
    guard = registration("w", ["control", "treatment"], min_samples_per_arm=10,
                         guardrails='[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]')
    lo, hi, p, plan = _binary_cs(2800, 5000, 2500, 5000, power=0.9)
    primary = [binary("w", "control", NIGHT, 5000, 2500), binary("w", "treatment", NIGHT, 5000, 2800)]
    rho2 = (-2 * math.log(0.0125) + math.log(1 - 2 * math.log(0.0125))) / (2 * plan)
    for sd, mean_t, words in ((600.0, 15010.0, "non-inferior (CS lower end {} in the beneficial direction is above -500.0)"),
                              (6000.0, 16500.0, "not shown non-inferior (CS lower end {} in the beneficial direction, "
                                                "margin -500.0)")):
        tokens = [continuous("w", "control", NIGHT, 5000, 15000.0, sd**2, metric="tokens"),
                  continuous("w", "treatment", NIGHT, 5000, mean_t, sd**2, metric="tokens")]
        g_hi = mean_t - 15000.0 + halfwidth(10000 * 2 * sd**2 / 5000, 10000, rho2, 0.0125)
        status = "tokens: " + words.format(_sig(-g_hi))
        got = row(look([guard], primary + tokens, NIGHT), NIGHT, role="primary")["decision_reason"]
        if sd == 600.0:
            assert got == (f"{cs.format(_sig(lo), _sig(hi))} lies entirely on the beneficial side of zero "
                           f"({padj.format(_sig(p, 3))}); guardrails: {status}")
        else:
            assert got == (f"{cs.format(_sig(lo), _sig(hi))} is on the beneficial side of zero "
                           f"({padj.format(_sig(p, 3))}), but adopt is held by guardrail tokens: {status}")


def test_the_invalid_reason_names_every_signal_that_fired_with_its_figures():
    # The p-values are those of the stats tests (tests/stats/test_srm.py, test_monitoring.py);
    # here the words: every signal of the epoch, in a fixed order, each with its figures.
    reg = registration("v1", ["control", "treatment"], min_samples_per_arm=10)
    figures = [binary("v1", "control", NIGHT, 3000, 1500), binary("v1", "treatment", NIGHT, 3000, 1560)]
    violations = [{"experiment_id": "v1", "epoch": 0, "day": DAY0 + dt.timedelta(days=k), "bad": 40, "total": 400}
                  for k in range(10)]  # 10% of the rows, every day from the first
    drift = [{"experiment_id": "v1", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    r = row(look([reg], figures, NIGHT, violations=violations, drift=drift), NIGHT)
    assert r["contract_violation_share"] == pytest.approx(0.10)
    assert r["decision_reason"] == (
        "invalid since 2026-10-01: the control arm's context digest drifted; contract violations exceed 5% of its "
        f"rows (10.0% quarantined, p = {_sig(r['contract_violation_p'], 3)}) (sticky until a reopened event)")
    # 4,800 / 5,200 on a 50/50 design
    reg = registration("srm", ["control", "treatment"], mde=0.05, min_samples_per_arm=10)
    r = row(look([reg], [binary("srm", "control", NIGHT, 4800, 2400), binary("srm", "treatment", NIGHT, 5200, 2600)],
                 NIGHT), NIGHT)
    assert r["srm_sequential_p"] < 0.01
    assert r["decision_reason"] == (f"invalid since {r['invalid_since']}: sequential SRM fired "
                                    f"(p = {_sig(r['srm_sequential_p'], 3)} < 0.01) (sticky until a reopened event)")


def test_power_at_the_mde_of_a_continuous_primary_metric_at_an_unequal_split():
    # score, registered sd 0.2 and MDE 0.05, 40/60 with the control the larger arm: the z-test
    # power at the effective control sample n / R (R = 1.73, the CS's inflation), ratio r = 2/3:
    # se = sqrt((0.2^2 + 0.2^2 / r) / (n / R)), power = Phi(0.05 / se - z) + Phi(-0.05 / se - z),
    # z = z_{1 - 0.0125/2}.
    reg = registration("pc", ["treatment", "control"], [0.4, 0.6], metric="score", baseline_sd=0.2, baseline_mean=0.6)
    figures = [continuous("pc", "control", NIGHT, 900, 0.60, 0.04), continuous("pc", "treatment", NIGHT, 600, 0.62, 0.04)]
    r = row(look([reg], figures, NIGHT), NIGHT)
    se = math.sqrt((0.04 + 0.04 / (0.4 / 0.6)) / (900 / 1.73))
    z = stats.norm.isf(0.0125 / 2)
    assert r["power_at_mde"] == pytest.approx(stats.norm.cdf(0.05 / se - z) + stats.norm.cdf(-0.05 / se - z), rel=1e-12)


def test_the_as_of_search_finds_the_latest_row_of_a_key_up_to_each_night():
    from zcl_assets.analysis.estimate import _Lookup

    # key 0: rows on days -2 and -5 (before the first night, in no particular order) and 1;
    # key 1: a row on day 3 (after the last of three nights) and on day 0. Expected row per
    # (key, night) written out: the latest row with day <= night, -1 before any.
    keys = np.array([0, 0, 1, 0, 1, 2])
    days = np.array([-2, 1, 3, -5, 0, 2])
    lookup = _Lookup(keys, days, 3)
    q_keys = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
    q_nights = np.array([0, 1, 2, 0, 1, 2, 1, 2, 2])
    assert lookup(q_keys, q_nights).tolist() == [0, 1, 1, 4, 4, 4, -1, 5, -1]
    assert _Lookup(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 3)(np.array([0]), np.array([1])).tolist() == [-1]


def test_users_seen_in_both_arms_add_up_night_by_night():
    # a session-randomized experiment: 3 users seen in a second arm on day 2, 2 more on day 5,
    # 4 on a day after the look (never counted); a user-randomized one shows none (null)
    reg = registration("x", ["control", "treatment"], min_samples_per_arm=10)
    users = registration("y", ["control", "treatment"], randomization_unit="user", sessions_per_unit="one",
                         min_samples_per_arm=10)
    night = DAY0 + dt.timedelta(days=6)
    figures = [binary(e, a, DAY0, 100, 50) for e in ("x", "y") for a in ("control", "treatment")]
    both = [{"experiment_id": "x", "day": DAY0 + dt.timedelta(days=2), "users": 3},
            {"experiment_id": "x", "day": DAY0 + dt.timedelta(days=5), "users": 2},
            {"experiment_id": "x", "day": DAY0 + dt.timedelta(days=9), "users": 4},
            {"experiment_id": "y", "day": DAY0 + dt.timedelta(days=2), "users": 7}]
    out = look([reg, users], figures, night, both_arms=both)
    x = out.filter(pl.col("experiment_id") == "x").sort("as_of").get_column("users_in_both_arms").to_list()
    assert x == [0, 0, 3, 3, 3, 5, 5]
    assert out.filter(pl.col("experiment_id") == "y").get_column("users_in_both_arms").is_null().all()


def test_two_guardrails_are_read_in_their_registered_order_and_the_first_failing_one_holds():
    # tokens is registered before time_minutes (names in the other order); both harmed: the
    # reason names tokens, and the status lists both in the registered order.
    guards = ('[{"metric": "tokens", "direction": "decrease", "margin": 500.0},'
              ' {"metric": "time_minutes", "direction": "decrease", "margin": 1.0}]')
    reg = registration("w2", ["control", "treatment"], min_samples_per_arm=10, guardrails=guards)
    _, _, _, plan = _binary_cs(2800, 5000, 2500, 5000, power=1 - 0.2 / 3)
    rho2 = (-2 * math.log(0.0125) + math.log(1 - 2 * math.log(0.0125))) / (2 * plan)
    figures = [binary("w2", "control", NIGHT, 5000, 2500), binary("w2", "treatment", NIGHT, 5000, 2800),
               continuous("w2", "control", NIGHT, 5000, 15000.0, 6000.0**2, metric="tokens"),
               continuous("w2", "treatment", NIGHT, 5000, 16500.0, 6000.0**2, metric="tokens"),
               continuous("w2", "control", NIGHT, 5000, 30.0, 10.0**2, metric="time_minutes"),
               continuous("w2", "treatment", NIGHT, 5000, 32.0, 10.0**2, metric="time_minutes")]
    r = row(look([reg], figures, NIGHT), NIGHT, role="primary")

    def lower(diff, sd):  # beneficial-direction lower end of a decrease metric: -(diff + half-width)
        return -(diff + halfwidth(10000 * 2 * sd**2 / 5000, 10000, rho2, 0.0125))

    assert r["guardrail_status"] == (
        f"tokens: not shown non-inferior (CS lower end {_sig(lower(1500.0, 6000.0))} in the beneficial direction, "
        f"margin -500.0); time_minutes: not shown non-inferior (CS lower end {_sig(lower(2.0, 10.0))} in the "
        "beneficial direction, margin -1.0)")
    assert r["decision"] == "continue" and "but adopt is held by guardrail tokens: " in r["decision_reason"]


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


def test_a_period_without_a_centred_sum_of_squares_leaves_the_pooled_variance_unknown():
    # Two periods of a continuous metric; the treatment's first-period figures carry no centred
    # sum of squares and no exported variance: the pooled sample variance is unknown (null), not
    # the second period's alone. With both known it is that of the concatenated values.
    rng = np.random.default_rng(5)
    reg = registration("m2", ["control", "treatment"], [0.5, 0.5], metric="score", baseline_sd=0.2,
                       min_samples_per_arm=10)
    events = [{"experiment_id": "m2", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.4, "treatment": 0.6}'}]
    data = {(a, s): rng.normal(0.5, 0.2, 300 + 100 * s) for a in ("control", "treatment") for s in (0, 1)}
    figures = [_arm_figures("m2", a, NIGHT, v, s) for (a, s), v in data.items()]

    def pooled(figs):
        return row(look([reg], figs, NIGHT, events=events, output="last"))

    both = pooled(figures)
    values = np.concatenate([data[("treatment", 0)], data[("treatment", 1)]])
    assert both["variance_treatment"] == pytest.approx(values.var(ddof=1), rel=1e-9)
    missing = [dict(f, m2_v=None) if (f["arm"], f["segment"]) == ("treatment", 0) else f for f in figures]
    r = pooled(missing)
    assert r["variance_treatment"] is None and r["variance_control"] == pytest.approx(both["variance_control"])


def test_a_guardrail_row_carries_no_decision_status_or_invalid_spell_of_its_own():
    # The decision, the guardrail status and the invalid spell belong to the primary row (the
    # report prints a row's guardrail status after it); the drift on day 5 makes the experiment
    # invalid from that night on.
    guard = '[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]'
    reg = registration("g2", ["control", "treatment"], guardrails=guard, min_samples_per_arm=10)
    figures = [binary("g2", "control", NIGHT, 5000, 2500), binary("g2", "treatment", NIGHT, 5000, 2800),
               continuous("g2", "control", NIGHT, 5000, 15000.0, 600.0**2, metric="tokens"),
               continuous("g2", "treatment", NIGHT, 5000, 15010.0, 600.0**2, metric="tokens")]
    drift = [{"experiment_id": "g2", "epoch": 0, "drift_day": DAY0 + dt.timedelta(days=5)}]
    out = look([reg], figures, NIGHT, drift=drift)
    p, g = row(out, NIGHT, role="primary"), row(out, NIGHT, role="guardrail")
    assert p["decision"] == "invalid" and p["invalid_since"] == DAY0 + dt.timedelta(days=5)
    assert p["guardrail_status"].startswith("tokens: non-inferior")
    keys = ("decision", "decision_rule", "decision_reason", "guardrail_status", "invalid_since", "power_at_mde")
    assert {k: g[k] for k in keys} == dict.fromkeys(keys)
    assert p["decision_reason"].startswith("invalid since 2026-10-06")


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
