"""The deciding steps of the look (verdict.py): CS and Holm, the deciding interval, guardrails, progress, decision.

Each expected figure is computed here from the published formula or by hand.
"""

from __future__ import annotations

import datetime as dt
import math
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from tests.analysis.looks import (
    DAY0,
    NIGHT,
    T0,
    Z80,
    binary,
    binary_cs,
    build,
    continuous,
    cs_reference,
    cuped_history,
    halfwidth,
    look,
    registration,
    row,
    sig,
)
from tests.plan_reference import r_reference
from zcl_assets.analysis.engine import chain
from zcl_assets.analysis.estimate import Nights
from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.verdict import Interval, guardrails


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


def test_binary_cs_is_clipped_to_minus_one_one():
    reg = registration("e7", ["control", "treatment"], min_samples_per_arm=10, mde=0.3, baseline_mean=0.3)
    # in burn-in (2 successes): no deciding interval yet, tonight's CS shown and clipped
    r = row(look([reg], [binary("e7", "control", NIGHT, 20, 2), binary("e7", "treatment", NIGHT, 20, 19)], NIGHT), NIGHT)
    assert -1.0 <= r["cs_night_low"] and r["cs_night_high"] == 1.0  # unclipped it would exceed 1
    assert r["cs_low"] is None and r["cs_looks"] == 0 and r["decision_rule"] == 2
    # past burn-in (10 successes, 10 failures) on its first night of data: one look intersected,
    # the deciding interval is tonight's CS
    r = row(look([reg], [binary("e7", "control", NIGHT, 30, 10), binary("e7", "treatment", NIGHT, 30, 20)], NIGHT), NIGHT)
    sigma2, n, rho2 = cs_reference(1 / 3, 2 / 9, 30, 2 / 9, 30, 0.0125, 2 * r["planned_n_per_arm"])
    assert r["cs_high"] == r["cs_night_high"] == pytest.approx(1 / 3 + halfwidth(sigma2, n, rho2, 0.0125), rel=1e-9)
    assert r["cs_looks"] == 1 and r["cs_since"] == NIGHT


def test_guardrail_harm_holds_adopt_and_names_the_guardrail():
    guard = '[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]'
    reg = registration("g1", ["control", "treatment"], guardrails=guard)
    harmed = [binary("g1", "control", NIGHT, 5000, 2500), binary("g1", "treatment", NIGHT, 5000, 2800),
              continuous("g1", "control", NIGHT, 5000, 15000.0, 6000.0**2, metric="tokens"),
              continuous("g1", "treatment", NIGHT, 5000, 16500.0, 6000.0**2, metric="tokens")]
    out = look([reg], harmed, NIGHT)
    r = row(out, NIGHT, role="primary")
    assert r["cs_low"] > 0 and r["decision"] == "continue" and r["decision_rule"] == 4
    g = row(out, NIGHT, role="guardrail")
    # tokens is a decrease metric: its CS (treatment minus control) lies wholly above +500,
    # breached, said first and in the metric's own direction (no sign flip)
    assert g["cs_low"] > 500 and g["guardrail_verdict"] == "breached"
    assert r["decision_reason"].startswith(f"guardrail tokens breached: {sig(g['cs_low'], 4, True)} to "
                                           f"{sig(g['cs_high'], 4, True)} against a margin of +500; ")
    assert r["guardrail_status"].startswith("tokens breached: ")
    fine = harmed[:2] + [continuous("g1", "control", NIGHT, 5000, 15000.0, 600.0**2, metric="tokens"),
                         continuous("g1", "treatment", NIGHT, 5000, 15010.0, 600.0**2, metric="tokens")]
    r2 = row(look([reg], fine, NIGHT), NIGHT, role="primary")
    assert r2["decision"] == "adopt" and r2["guardrail_status"].startswith("tokens non-inferior: ")
    assert row(look([reg], fine, NIGHT), NIGHT, role="guardrail")["guardrail_verdict"] == "non-inferior"


def test_two_guardrails_are_read_in_their_registered_order_and_the_first_failing_one_holds():
    # tokens is registered before time_minutes (names in the other order); both harmed: the
    # reason names tokens, and the status lists both in the registered order.
    guards = ('[{"metric": "tokens", "direction": "decrease", "margin": 500.0},'
              ' {"metric": "time_minutes", "direction": "decrease", "margin": 1.0}]')
    reg = registration("w2", ["control", "treatment"], min_samples_per_arm=10, guardrails=guards)
    _, _, _, plan = binary_cs(2800, 5000, 2500, 5000, power=1 - 0.2 / 3)
    rho2 = (-2 * math.log(0.0125) + math.log(1 - 2 * math.log(0.0125))) / (2 * plan)
    figures = [binary("w2", "control", NIGHT, 5000, 2500), binary("w2", "treatment", NIGHT, 5000, 2800),
               continuous("w2", "control", NIGHT, 5000, 15000.0, 6000.0**2, metric="tokens"),
               continuous("w2", "treatment", NIGHT, 5000, 16500.0, 6000.0**2, metric="tokens"),
               continuous("w2", "control", NIGHT, 5000, 30.0, 10.0**2, metric="time_minutes"),
               continuous("w2", "treatment", NIGHT, 5000, 32.0, 10.0**2, metric="time_minutes")]
    r = row(look([reg], figures, NIGHT), NIGHT, role="primary")

    def ends(diff, sd):  # the CS of treatment minus control, in the metric's own units
        hw = halfwidth(10000 * 2 * sd**2 / 5000, 10000, rho2, 0.0125)
        return f"{sig(diff - hw, 4, True)} to {sig(diff + hw, 4, True)}"

    assert r["guardrail_status"] == (f"tokens breached: {ends(1500.0, 6000.0)} against a margin of +500; "
                                     f"time_minutes breached: {ends(2.0, 10.0)} against a margin of +1")
    assert r["decision"] == "continue" and r["decision_reason"].startswith("guardrail tokens breached: ")


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
    # plan = ceil(R n_fixed / 0.85) (registered verified share), R calibrated at alpha .0125, power .80
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * (0.25 + 0.55 * 0.45) / 0.05**2
    assert plan == math.ceil(r_reference(0.0125, 0.8) * n_fixed / 0.85)
    assert r["information_fraction"] == pytest.approx(2000 / plan)
    # 10 days since the first assignment at 00:00 of the first day: 200 units a day an arm
    assert r["days_since_first_assignment"] == pytest.approx(10.0)
    assert r["days_to_plan"] == math.ceil((plan - 2000) / 200)
    from zcl_assets.stats.power import power_at

    assert r["power_at_mde"] == pytest.approx(float(power_at(1700, 0.05, 0.5, 0.0125)), rel=1e-12)


def test_power_reached_counts_on_the_variance_reduction_the_plan_counts_on():
    reg = registration("pc", ["control", "treatment"])
    night = DAY0 + dt.timedelta(days=9)
    figures = [binary("pc", "control", night, 1700, 850), binary("pc", "treatment", night, 1700, 900)]
    r = row(look([reg], figures, night, traffic=cuped_history("pc")), night)
    # the plan's share: the history's bound 0.348272 (n = 100, R^2 = 0.45) at 0.50 -> 0.55, the treatment
    # keeping 1 - 0.05 / 0.5 = 0.9 of the covariance: 0.348272 x 0.25 x (1 + 0.81) / (0.25 + 0.2475) = 0.316770
    assert r["planned_n_per_arm"] == math.ceil(r_reference(0.0125, 0.8) * (1 - 0.316770) * (
        stats.norm.isf(0.0125 / 2) + Z80) ** 2 * 0.4975 / 0.05**2)
    # power of the z-test at 1700 units an arm, the effective sample 1700 / (R (1 - 0.316770)):
    # Phi(0.05 / se - z_{1 - 0.0125/2}) with se^2 = 0.4975 / n_eff (the far tail adds nothing at 1e-12)
    n_eff = 1700 / (r_reference(0.0125, 0.8) * (1 - 0.316770))
    expected = stats.norm.cdf(0.05 / math.sqrt(0.4975 / n_eff) - stats.norm.isf(0.0125 / 2))
    assert r["power_at_mde"] == pytest.approx(expected, rel=1e-5)


def test_burn_in_binary_counts_and_days():
    reg = registration("b1", ["control", "treatment"], min_samples_per_arm=10)
    early = row(look([reg], [binary("b1", "control", DAY0 + dt.timedelta(days=3), 500, 250),
                             binary("b1", "treatment", DAY0 + dt.timedelta(days=3), 500, 400)],
                     DAY0 + dt.timedelta(days=3)))
    assert early["decision"] == "continue" and "7 days" in early["decision_reason"]
    few = row(look([reg], [binary("b1", "control", NIGHT, 500, 5), binary("b1", "treatment", NIGHT, 500, 60)], NIGHT), NIGHT)
    assert few["decision"] == "continue" and "10 successes or failures" in few["decision_reason"]


def test_a_refused_registration_is_invalid_with_its_reason():
    from zcl_assets.analysis.registration import RegistrationPolicy

    regs = [registration(f"f{i}", ["control", "treatment"], task_type="shared",
                         registered_at=T0 + dt.timedelta(hours=i)) for i in range(3)]
    figures = [binary(f"f{i}", a, NIGHT, 3000, 1500) for i in range(3) for a in ("control", "treatment")]
    out = look(regs, figures, NIGHT, policy=RegistrationPolicy(alpha_slots=2))
    third = row(out, NIGHT, experiment_id="f2")
    assert third["decision"] == "invalid" and "registration refused" in third["decision_reason"]
    assert row(out, NIGHT, experiment_id="f0")["alpha_share"] == pytest.approx(0.025)


def test_power_at_the_mde_of_a_continuous_primary_metric_at_an_unequal_split():
    # score, registered sd 0.2 and MDE 0.05, 40/60 with the control the larger arm: the z-test
    # power at the effective control sample n / R (R at alpha .0125, power .80, the CS's inflation), ratio r = 2/3:
    # se = sqrt((0.2^2 + 0.2^2 / r) / (n / R)), power = Phi(0.05 / se - z) + Phi(-0.05 / se - z),
    # z = z_{1 - 0.0125/2}.
    reg = registration("pc", ["treatment", "control"], [0.4, 0.6], metric="score", baseline_sd=0.2, baseline_mean=0.6)
    figures = [continuous("pc", "control", NIGHT, 900, 0.60, 0.04), continuous("pc", "treatment", NIGHT, 600, 0.62, 0.04)]
    r = row(look([reg], figures, NIGHT), NIGHT)
    se = math.sqrt((0.04 + 0.04 / (0.4 / 0.6)) / (900 / r_reference(0.0125, 0.8)))
    z = stats.norm.isf(0.0125 / 2)
    assert r["power_at_mde"] == pytest.approx(stats.norm.cdf(0.05 / se - z) + stats.norm.cdf(-0.05 / se - z), rel=1e-12)


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


def test_a_comparison_without_analysable_units_is_reported_not_dropped():
    reg = registration("e8", ["control", "a", "b"])
    night = DAY0 + dt.timedelta(days=1)
    out = look([reg], [binary("e8", "control", night, 3, 1), binary("e8", "a", night, 2, 1)], night)
    b = row(out, night, treatment_arm="b")
    assert b["n_treatment"] == 0 and b["decision"] == "continue" and b["decision_rule"] == 2
    assert "no analysable units" in b["decision_reason"] and b["cs_p_value"] is None



def _nights(kinds, **columns):
    """Nights of hand-written comparisons (``columns``: design columns, one value per comparison)."""
    n = len(kinds)
    zeros = np.zeros(n, dtype=np.int64)
    return Nights(pl.DataFrame(columns), pl.Series("as_of", [NIGHT] * n), zeros, zeros, np.asarray(columns.pop("arm", zeros)),
                  zeros, np.asarray(kinds), np.arange(n))


def test_the_first_guardrail_not_non_inferior_holds_its_arm_a_breach_first_and_every_verdict_is_written():
    # One experiment, three treatment arms. Arm 1: a primary row, tokens (order 0, decrease, CS
    # [-50, 1500] below +2000: non-inferior) and time (order 1, decrease, CS [-1, 3] across +2:
    # not yet shown). Arm 2: a primary row, an undefined tokens CS (not yet shown) and time
    # wholly above +2 (breached: it holds, and is named, before tokens). Arm 3: tokens with zero
    # variance in both arms and equal means (no CS, difference 0): non-inferior, adopt free.
    at = _nights(["binary_proportion", "continuous_mean", "continuous_mean", "binary_proportion", "continuous_mean",
                  "continuous_mean", "binary_proportion", "continuous_mean"],
                 role=["primary", "guardrail", "guardrail", "primary", "guardrail", "guardrail", "primary", "guardrail"],
                 metric=["success", "tokens", "time_minutes", "success", "tokens", "time_minutes", "success", "tokens"],
                 sign=[1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0, -1.0],
                 margin=[None, 2000.0, 2.0, None, 2000.0, 2.0, None, 2000.0],
                 guardrail_order=[-1, 0, 1, -1, 0, 1, -1, 0], arm=[1, 1, 1, 2, 2, 2, 3, 3],
                 is_primary=[True, False, False, True, False, False, True, False])
    nan, never = np.nan, np.full(8, -1)
    low = np.array([0.01, -50.0, -1.0, 0.02, nan, 2.5, 0.03, nan])
    high = np.array([0.05, 1500.0, 3.0, 0.06, nan, 4.0, 0.07, nan])
    interval = Interval(low, high, low, high, np.ones(8, dtype=np.int64), never, never)
    estimate = SimpleNamespace(var_t=np.array([.1, 9e4, 4, .1, 9e4, 4, .1, 0]), var_c=np.array([.1, 9e4, 4, .1, 9e4, 4, .1, 0]),
                               diff=np.array([.03, 700, 1, .04, 5, 3.2, .05, 0]))
    got = guardrails(at, interval, estimate, np.full(8, ""), SimpleNamespace(nights=1, max_arms=4))
    assert got.verdict.tolist() == [None, "non-inferior", "not yet shown", None, "not yet shown", "breached", None,
                                    "non-inferior"]
    assert got.held.tolist() == ["held by guardrail time_minutes not yet shown non-inferior: -1 to +3 against a margin of +2",
                                 "", "", "guardrail time_minutes breached: +2.5 to +4 against a margin of +2", "", "", "", ""]
    assert got.breached.tolist() == [False, False, False, True, False, False, False, False]
    assert got.status[0] == ("tokens non-inferior: -50 to +1,500 against a margin of +2,000; "
                             "time_minutes not yet shown non-inferior: -1 to +3 against a margin of +2")
    assert got.status[3] == ("tokens not yet shown non-inferior: no interval yet against a margin of +2,000; "
                             "time_minutes breached: +2.5 to +4 against a margin of +2")
    assert got.status[6] == "tokens non-inferior: both arms constant and equal"


def test_the_plan_is_reached_at_the_expected_verified_share_and_each_arms_ratio():
    # 1:2 allocation, expected verified share 0.8: the control arm needs 0.8 N_plan analysed
    # units and the treatment arm 0.8 N_plan x 2 (rule 5); one unit short in either arm is short
    reg = registration("v", ["control", "treatment"], [1 / 3, 2 / 3], metric="score", baseline_sd=0.2,
                       expected_verified_share=0.8)
    plan = row(look([reg], [continuous("v", "control", NIGHT, 10, 0.6, 0.04),
                             continuous("v", "treatment", NIGHT, 10, 0.6, 0.04)], NIGHT), NIGHT)["planned_n_per_arm"]
    need_c = math.ceil(0.8 * plan)
    need_t = math.ceil(0.8 * plan * 2.0)
    for n_c, n_t, reached in ((need_c, need_t, True), (need_c - 1, need_t, False), (need_c, need_t - 1, False)):
        inputs = build([reg], [continuous("v", "control", NIGHT, n_c, 0.6, 0.04),
                               continuous("v", "treatment", NIGHT, n_t, 0.6, 0.04)], NIGHT, output="last")
        grid = Grid.build(inputs.looks, inputs.segments, inputs.arms, inputs.comparisons.select("experiment_id", "metric"))
        done = chain(inputs, grid)
        assert done.progress.plan_reached[done.nights.d == grid.d(pl.Series([NIGHT]))[0]].tolist() == [reached], \
            (n_c, n_t)


def test_burn_in_waits_for_successes_only_where_the_metric_counts_them():
    # 9 successes in the control arm of a binary metric: burn-in; a continuous metric whose
    # arms hold 9 units above its mean waits for nothing of the kind
    binary_reg = registration("b", ["control", "treatment"], min_samples_per_arm=20, mde=0.3, baseline_mean=0.3)
    r = row(look([binary_reg], [binary("b", "control", NIGHT, 400, 9), binary("b", "treatment", NIGHT, 400, 200)], NIGHT))
    assert r["decision_rule"] == 2 and "fewer than 10 successes or failures" in r["decision_reason"]
    score_reg = registration("s", ["control", "treatment"], metric="score", baseline_sd=0.2, min_samples_per_arm=20)
    r = row(look([score_reg], [continuous("s", "control", NIGHT, 400, 0.5, 0.04),
                               continuous("s", "treatment", NIGHT, 400, 0.7, 0.04)], NIGHT))
    assert r["decision"] == "adopt" and r["successes_control"] is None


def test_the_deciding_interval_is_the_running_intersection_of_the_nightly_cs():
    # Night 8: 1,150 / 2,000 against 1,000 / 2,000 (+0.075, CS excludes zero: adopt); night 9 adds
    # 2,000 a side at 930 / 1,000 (cumulative +0.02, tonight's CS includes zero). The rule reads
    # [max of the lower ends, min of the upper ends] over both looks (each CS from the hand
    # formulas, binary_cs), the running minimum of the anytime p, and adopt stands.
    reg = registration("ri", ["control", "treatment"], min_samples_per_arm=10)
    d8, d9 = DAY0 + dt.timedelta(days=8), DAY0 + dt.timedelta(days=9)
    figures = [binary("ri", "control", d8, 2000, 1000), binary("ri", "treatment", d8, 2000, 1150),
               binary("ri", "control", d9, 4000, 2000), binary("ri", "treatment", d9, 4000, 2080)]
    out = look([reg], figures, d9)
    lo8, hi8, p8, _ = binary_cs(1150, 2000, 1000, 2000)
    lo9, hi9, p9, _ = binary_cs(2080, 4000, 2000, 4000)
    assert lo8 > 0 and lo9 < 0 < hi9 and max(lo8, lo9) < min(hi8, hi9)
    first, second = row(out, d8), row(out, d9)
    assert first["decision"] == "adopt" and (first["cs_low"], first["cs_high"]) == (pytest.approx(lo8), pytest.approx(hi8))
    assert (second["cs_night_low"], second["cs_night_high"]) == (pytest.approx(lo9), pytest.approx(hi9))
    assert (second["cs_low"], second["cs_high"]) == (pytest.approx(max(lo8, lo9)), pytest.approx(min(hi8, hi9)))
    assert second["cs_p_value"] == pytest.approx(p9) and second["cs_p_running"] == pytest.approx(min(p8, p9))
    assert (second["cs_looks"], second["cs_since"]) == (2, d8)
    assert second["decision"] == "adopt" and second["cs_p_adjusted"] == pytest.approx(min(p8, p9))


def test_an_empty_running_intersection_is_invalid_from_its_night_and_sticky():
    # Night 8: 3,000 / 5,000 against 2,000 / 5,000 (+0.2); night 9 adds 5,000 a side at 0 against
    # 5,000 (cumulative 3,000 / 10,000 against 7,000 / 10,000, -0.4): the two CS do not meet
    # (by hand below), no single constant effect fits both looks; invalid from night 9, and
    # still on night 10 with no new data
    reg = registration("em", ["control", "treatment"], min_samples_per_arm=10)
    d8, d9, d10 = (DAY0 + dt.timedelta(days=k) for k in (8, 9, 10))
    figures = [binary("em", "control", d8, 5000, 2000), binary("em", "treatment", d8, 5000, 3000),
               binary("em", "control", d9, 10000, 7000), binary("em", "treatment", d9, 10000, 3000)]
    lo8, _, _, _ = binary_cs(3000, 5000, 2000, 5000)
    _, hi9, _, _ = binary_cs(3000, 10000, 7000, 10000)
    assert hi9 < lo8
    out = look([reg], figures, d10)
    assert row(out, d8)["decision"] == "adopt"
    for night in (d9, d10):
        r = row(out, night)
        assert r["decision"] == "invalid" and r["invalid_since"] == d9 and r["cs_low"] is None
        assert r["invalid_reason"] == ("the effect is not constant over time (the running intersection of its "
                                       "confidence sequences is empty)")
        assert r["decision_reason"].startswith("invalid since 2026-10-10: the effect is not constant over time")


def test_a_guardrail_constant_and_equal_in_both_arms_is_non_inferior_and_adopt_goes_through():
    # tokens exactly 15,000 in every session of both arms: zero variance, no CS, difference 0,
    # within any margin: non-inferior (before, "CS lower end NaN" held adopt for ever)
    guard = '[{"metric": "tokens", "direction": "decrease", "margin": 500.0}]'
    reg = registration("zv", ["control", "treatment"], guardrails=guard, min_samples_per_arm=10)
    figures = [binary("zv", "control", NIGHT, 5000, 2500), binary("zv", "treatment", NIGHT, 5000, 2800),
               continuous("zv", "control", NIGHT, 5000, 15000.0, 0.0, metric="tokens"),
               continuous("zv", "treatment", NIGHT, 5000, 15000.0, 0.0, metric="tokens")]
    out = look([reg], figures, NIGHT)
    p, g = row(out, NIGHT, role="primary"), row(out, NIGHT, role="guardrail")
    assert g["cs_low"] is None and g["difference"] == 0.0 and g["guardrail_verdict"] == "non-inferior"
    assert p["decision"] == "adopt" and p["guardrail_status"] == "tokens non-inferior: both arms constant and equal"
    # constant but unequal arms (15,000 against 15,400): no interval, not shown
    unequal = figures[:3] + [continuous("zv", "treatment", NIGHT, 5000, 15400.0, 0.0, metric="tokens")]
    p = row(look([reg], unequal, NIGHT), NIGHT, role="primary")
    assert p["decision"] == "continue" and p["decision_reason"].startswith("held by guardrail tokens not yet shown")
