"""Tests for zcl_assets.stats.decision: one per rule of DESIGN section 6, and precedence."""

from __future__ import annotations

import numpy as np
import pytest

from zcl_assets.stats.decision import (
    ADOPT,
    CONTINUE,
    INCONCLUSIVE,
    INVALID,
    NO_EFFECT,
    REJECT,
    Label,
    decide,
)

# A look past burn-in and short of the planned sample.
BASE = dict(mde=0.05, n_t=500, n_c=500, n_plan=1000, min_samples=100,
            days_since_first_assignment=10)


def one(ci_low, ci_high, **kw):
    args = dict(BASE)
    args.update(kw)
    d = decide(ci_low, ci_high, **args)
    return str(d.label), str(d.reason)


def test_labels_are_the_design_strings():
    assert {lab.value for lab in Label} == {
        "adopt", "reject", "no_effect", "inconclusive", "continue", "invalid"}
    assert Label.ADOPT == "adopt"


# Rule 1
@pytest.mark.parametrize("flag", ["srm_fired", "baseline_drift", "outcome_imbalance",
                                  "contract_violations_exceeded", "already_invalid"])
def test_rule1_invalid_flags_win_over_everything(flag):
    label, reason = one(0.1, 0.2, **{flag: True})  # would otherwise be adopt
    assert label == INVALID and reason == INVALID_REASONS[flag]


# the reason each invalid flag gives, as the report shows it
INVALID_REASONS = {
    "srm_fired": "sequential SRM fired",
    "baseline_drift": "control context digest drifted",
    "outcome_imbalance": "verified outcomes imbalanced between arms",
    "contract_violations_exceeded": "contract violations exceed threshold",
    "already_invalid": "invalid since an earlier look (no reopen event)",
}


def test_guardrail_intervals_must_come_whole():
    for half in (dict(guardrail_ci_low=[-0.1]), dict(guardrail_ci_high=[0.1]),
                 dict(guardrail_ci_low=[-0.1], guardrail_ci_high=[0.1])):
        with pytest.raises(ValueError, match="^guardrails need ci_low, ci_high and margin together$"):
            decide(0.1, 0.2, **BASE, **half)


def test_rule1_invalid_is_sticky_until_reopen():
    assert one(0.1, 0.2, already_invalid=True)[0] == INVALID
    assert one(0.1, 0.2, already_invalid=False)[0] == ADOPT


# Rule 2
def test_rule2_burn_in_days():
    label, reason = one(0.1, 0.2, days_since_first_assignment=6.9)
    assert label == CONTINUE and "7 days" in reason
    assert one(0.1, 0.2, days_since_first_assignment=7)[0] == ADOPT
    assert one(0.1, 0.2, days_since_first_assignment=np.nan)[0] == CONTINUE


def test_rule2_burn_in_minimum_sample():
    label, reason = one(0.1, 0.2, n_t=99)
    assert label == CONTINUE and "minimum sample" in reason
    assert one(0.1, 0.2, n_c=99)[0] == CONTINUE
    # exactly the minimum in either arm is enough (DESIGN rule 2: "fewer units than the minimum sample")
    assert one(0.1, 0.2, n_t=100)[0] == ADOPT and one(0.1, 0.2, n_c=100)[0] == ADOPT
    assert one(0.1, 0.2, n_t=100, n_c=100)[0] == ADOPT


def test_rule2_burn_in_binary_counts():
    counts = dict(successes_t=50, failures_t=50, successes_c=50, failures_c=9)
    label, reason = one(0.1, 0.2, **counts)
    assert label == CONTINUE and "successes or failures" in reason
    counts["failures_c"] = 10
    assert one(0.1, 0.2, **counts)[0] == ADOPT


def test_binary_counts_of_several_comparisons_decide_each_one():
    # every other input is one value; the counts are per comparison, so the decisions are too:
    # the second comparison's control has 9 failures (below 10), the others 10 and 40
    d = decide(0.1, 0.2, **BASE, successes_t=[50, 50, 50], failures_t=[50, 50, 50], successes_c=[50, 50, 50],
               failures_c=[10, 9, 40])
    assert [str(x) for x in d.label] == [ADOPT, CONTINUE, ADOPT]
    # and the other way round: one set of counts, intervals per comparison
    d = decide([0.1, -0.2, -0.01], [0.2, -0.1, 0.01], **BASE, successes_t=50, failures_t=50, successes_c=50,
               failures_c=40)
    assert [str(x) for x in d.label] == [ADOPT, REJECT, CONTINUE]


def test_rule2_beats_reject_and_rule1_beats_rule2():
    assert one(-0.2, -0.1, days_since_first_assignment=3)[0] == CONTINUE
    assert one(-0.2, -0.1, days_since_first_assignment=3, srm_fired=True)[0] == INVALID


# Rule 3
def test_rule3_reject_on_harmful_side():
    assert one(-0.2, -0.01)[0] == REJECT
    # a decrease metric: a positive difference is harmful
    assert one(0.01, 0.2, direction=-1)[0] == REJECT


def test_rule3_touching_zero_is_not_entirely_on_a_side():
    assert one(-0.2, 0.0)[0] == CONTINUE
    assert one(0.0, 0.2)[0] == CONTINUE


# Rule 4
def test_rule4_adopt_on_beneficial_side():
    assert one(0.01, 0.2)[0] == ADOPT
    assert one(-0.2, -0.01, direction=-1)[0] == ADOPT


def test_rule4_guardrail_holds_adoption():
    g = dict(guardrail_ci_low=[-0.5, -0.02], guardrail_ci_high=[0.5, 0.3],
             guardrail_margin=[0.1, 0.05], guardrail_names=["time_minutes", "tokens"])
    label, reason = one(0.01, 0.2, **g)
    assert label == CONTINUE and reason == "held by guardrail time_minutes"
    g["guardrail_ci_low"] = [-0.05, -0.02]
    assert one(0.01, 0.2, **g)[0] == ADOPT


def test_rule4_guardrail_direction_decrease():
    # tokens: decrease is good; difference CS [-5, 40] -> beneficial [-40, 5]; margin 30
    g = dict(guardrail_ci_low=[-5.0], guardrail_ci_high=[40.0], guardrail_direction=-1,
             guardrail_margin=[30.0], guardrail_names=["tokens"])
    assert one(0.01, 0.2, **g) == (CONTINUE, "held by guardrail tokens")
    g["guardrail_ci_high"] = [20.0]
    assert one(0.01, 0.2, **g)[0] == ADOPT


def test_rule4_undefined_guardrail_holds():
    g = dict(guardrail_ci_low=[np.nan], guardrail_ci_high=[np.nan],
             guardrail_margin=[0.1], guardrail_names=["score"])
    assert one(0.01, 0.2, **g) == (CONTINUE, "held by guardrail score")


def test_rule4_guardrail_cannot_cause_reject():
    g = dict(guardrail_ci_low=[-9.0], guardrail_ci_high=[-8.0],
             guardrail_margin=[0.1], guardrail_names=["score"])
    assert one(-0.01, 0.2, **g)[0] == CONTINUE


# Rule 5
def test_rule5_no_effect_and_inconclusive_only_at_planned_sample():
    assert one(-0.03, 0.04, n_t=1000, n_c=1000) == (NO_EFFECT, "planned sample reached; CS inside (-MDE, +MDE)")
    assert one(-0.03, 0.06, n_t=1000, n_c=1000) == (
        INCONCLUSIVE, "planned sample reached; CS neither excludes zero nor lies inside (-MDE, +MDE)")
    # before the planned sample, never no_effect (the sample-size brake)
    assert one(-0.03, 0.04)[0] == CONTINUE
    # treatment arm planned at ratio * n_plan
    assert one(-0.03, 0.04, n_t=1000, n_c=1000, allocation_ratio=2)[0] == CONTINUE
    assert one(-0.03, 0.04, n_t=2000, n_c=1000, allocation_ratio=2)[0] == NO_EFFECT


def test_rule5_after_rule3_and_4():
    assert one(0.01, 0.04, n_t=1000, n_c=1000)[0] == ADOPT
    assert one(-0.04, -0.01, n_t=1000, n_c=1000)[0] == REJECT


def test_rule5_unreachable_plan_never_reached():
    assert one(-0.03, 0.04, n_t=10**9, n_c=10**9, n_plan=np.inf)[0] == CONTINUE


# Rule 6
def test_rule6_continue_otherwise():
    label, reason = one(-0.1, 0.2)
    assert label == CONTINUE and "planned sample not reached" in reason


# Edge cases
def test_nan_interval_never_decides():
    for kw in ({}, dict(n_t=1000, n_c=1000)):
        label, reason = one(np.nan, np.nan, **kw)
        assert label == CONTINUE and reason.startswith("interval undefined")
    # one end missing is as undefined as both, in either direction (the other end alone would
    # show a benefit: 0.1 > 0)
    for lo, hi in ((np.nan, 0.2), (0.1, np.nan)):
        for direction in (1, -1):
            label, reason = one(lo * direction, hi * direction, direction=direction, n_t=1000, n_c=1000)
            assert label == CONTINUE and reason.startswith("interval undefined")


def test_reversed_interval_for_decrease_metric():
    # with direction -1, [lo, hi] maps to [-hi, -lo]
    assert one(-0.3, -0.1, direction=-1)[0] == ADOPT


def test_vectorised_rows_match_single_calls():
    lo = np.array([0.01, -0.2, -0.03, -0.03, np.nan, 0.1])
    hi = np.array([0.2, -0.01, 0.04, 0.06, np.nan, 0.2])
    n = np.array([500, 500, 1000, 1000, 1000, 500])
    srm = np.array([False, False, False, False, False, True])
    d = decide(lo, hi, 0.05, n, n, 1000, 100, 10, srm_fired=srm)
    assert list(d.label) == [ADOPT, REJECT, NO_EFFECT, INCONCLUSIVE, CONTINUE, INVALID]
    for i in range(lo.size):
        assert one(lo[i], hi[i], n_t=n[i], n_c=n[i], srm_fired=srm[i])[0] == d.label[i]


def test_partial_binary_counts_is_a_usage_error():
    with pytest.raises(ValueError):
        decide(0.1, 0.2, **BASE, successes_t=10)


def test_vectorised_guardrails_shape_s_by_g():
    lo = np.array([0.01, 0.01, -0.2])
    g_lo = np.array([[-0.01, -0.01], [-0.01, -0.5], [-0.01, -0.5]])
    d = decide(lo, 0.2, 0.05, 500, 500, 1000, 100, 10, guardrail_ci_low=g_lo,
               guardrail_ci_high=g_lo + 0.1, guardrail_margin=[0.05, 0.05],
               guardrail_names=["time", "tokens"])
    assert list(d.label) == [ADOPT, CONTINUE, CONTINUE]
    assert d.reason[1] == "held by guardrail tokens"
    assert d.reason[2] != "held by guardrail tokens"  # guardrails only hold adopt


def test_margins_per_comparison_broadcast_against_shared_guardrail_intervals():
    # One primary CS and one pair of guardrail intervals shared by three comparisons that
    # differ only in their margins (shape S + (g,) = (3, 2)): the margin alone sets S.
    # Guardrail beneficial lower ends: -0.04 and -0.02 (direction +1).
    margins = np.array([[0.05, 0.05], [0.03, 0.05], [0.05, 0.01]])
    d = decide(0.01, 0.2, **BASE, guardrail_ci_low=[-0.04, -0.02], guardrail_ci_high=[0.1, 0.1],
               guardrail_margin=margins, guardrail_names=["time", "tokens"])
    assert d.label.shape == (3,)
    assert list(d.label) == [ADOPT, CONTINUE, CONTINUE]
    assert list(d.reason[1:]) == ["held by guardrail time", "held by guardrail tokens"]


@pytest.mark.parametrize("given", [dict(successes_t=5), dict(successes_t=5, failures_t=5, successes_c=5)])
def test_some_binary_counts_without_the_others_are_refused(given):
    with pytest.raises(ValueError, match="^give all four binary counts or none$"):
        one(0.1, 0.2, **given)


@pytest.mark.parametrize("n_t, n_c", [(10, 0), (0, 10)])
def test_an_arm_without_units_is_burn_in_whatever_its_interval(n_t, n_c):
    # a finite interval given beside an empty arm still decides nothing: rule 2, burn-in
    assert one(0.1, 0.3, n_t=n_t, n_c=n_c) == (CONTINUE, "burn-in: an arm has no analysable units yet")


def test_no_effect_of_a_decrease_metric_reads_both_ends_turned():
    # direction -1: [-0.03, 0.04] becomes [-0.04, 0.03] in the beneficial direction, inside
    # (-0.05, 0.05) at the planned sample: no_effect (its upper end 0.03 is -(-0.03))
    assert one(-0.03, 0.04, direction=-1, n_t=1000, n_c=1000)[0] == NO_EFFECT
