"""Tests for zcl_assets.stats.decision: one per rule of DESIGN section 6, and precedence.

``decide`` reads the evidence the look gathers (rule 1's verdict, the burn-in, the guardrail
hold, the progress to the plan); ``burn_in`` and ``guardrail_verdict`` are the readings of
rule 2 and of each guardrail. How the look gathers them is tested in
``tests/analysis/test_verdict.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from zcl_assets.stats.decision import (
    ADOPT,
    BREACHED,
    CONTINUE,
    INCONCLUSIVE,
    INVALID,
    NO_EFFECT,
    NON_INFERIOR,
    NOT_YET_SHOWN,
    REJECT,
    Evidence,
    Label,
    burn_in,
    decide,
    guardrail_verdict,
)


def one(cs_low, cs_high, **fields):
    """The label and reason of one comparison, past burn-in and short of its plan unless told."""
    d = decide(Evidence(cs_low=cs_low, cs_high=cs_high, **{"mde": 0.05, **fields}))
    return str(d.label), str(d.reason)


def test_labels_are_the_design_strings():
    assert {lab.value for lab in Label} == {
        "adopt", "reject", "no_effect", "inconclusive", "continue", "invalid"}
    assert Label.ADOPT == "adopt"


# Rule 1
def test_rule1_invalid_wins_over_everything_with_its_reason():
    why = "invalid since an earlier look (no reopen event)"
    assert one(0.1, 0.2, invalid=why) == (INVALID, why)  # would otherwise be adopt
    assert one(-0.2, -0.1, invalid=why, burn_in="burn-in: x", plan_reached=True)[0] == INVALID
    assert one(0.1, 0.2, invalid="")[0] == ADOPT
    assert decide(Evidence(0.1, 0.2, 0.05, invalid=why)).rule.tolist() == 1


# Rule 2
def test_rule2_burn_in_beats_reject_and_the_interval_undefined():
    assert one(-0.2, -0.1, burn_in="burn-in: fewer than 7 days since first assignment") == (
        CONTINUE, "burn-in: fewer than 7 days since first assignment")
    assert decide(Evidence(np.nan, np.nan, 0.05, burn_in="burn-in: x")).rule.tolist() == 2


def test_burn_in_days():
    assert burn_in(500, 500, 100, 6.9).tolist() == "burn-in: fewer than 7 days since first assignment"
    assert burn_in(500, 500, 100, 7.0).tolist() == ""
    assert burn_in(500, 500, 100, np.nan).tolist().startswith("burn-in: fewer than 7 days")  # no assignment yet


def test_burn_in_minimum_sample():
    assert burn_in(99, 500, 100, 10.0).tolist() == "burn-in: an arm has fewer units than the minimum sample"
    assert burn_in(500, 99, 100, 10.0).tolist() != ""
    # exactly the minimum in either arm is enough (DESIGN rule 2: "fewer units than the minimum sample")
    assert burn_in([100, 500, 100], [500, 100, 100], 100, 10.0).tolist() == ["", "", ""]


def test_burn_in_binary_counts_read_the_fewest_successes_or_failures():
    assert burn_in(500, 500, 100, 10.0, fewest_count=9).tolist() == \
        "burn-in: an arm has fewer than 10 successes or failures"
    assert burn_in(500, 500, 100, 10.0, fewest_count=10).tolist() == ""
    # not known (NaN) is burn-in; a metric without successes (inf) has no count to wait for
    assert burn_in(500, 500, 100, 10.0, fewest_count=[np.nan, np.inf]).tolist() == [
        "burn-in: an arm has fewer than 10 successes or failures", ""]


def test_burn_in_reasons_come_in_the_rules_order():
    # no units first, then the counts, then the minimum sample, then the days
    got = burn_in([0, 50, 50, 500], [500, 50, 50, 500], 100, [3.0, 3.0, 3.0, 3.0], fewest_count=[0, 0, 20, 20])
    assert got.tolist() == ["burn-in: an arm has no analysable units yet",
                            "burn-in: an arm has fewer than 10 successes or failures",
                            "burn-in: an arm has fewer units than the minimum sample",
                            "burn-in: fewer than 7 days since first assignment"]


@pytest.mark.parametrize("n_t, n_c", [(10, 0), (0, 10)])
def test_an_arm_without_units_is_burn_in_whatever_its_interval(n_t, n_c):
    reason = burn_in(n_t, n_c, 1, 30.0)
    assert one(0.1, 0.3, burn_in=reason) == (CONTINUE, "burn-in: an arm has no analysable units yet")


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


def test_rule4_a_guardrail_holds_adopt_and_never_causes_reject():
    assert one(0.01, 0.2, held="held by guardrail tokens") == (CONTINUE, "held by guardrail tokens")
    assert decide(Evidence(0.01, 0.2, 0.05, held="held by guardrail tokens")).rule.tolist() == 4
    assert one(-0.2, -0.01, held="held by guardrail tokens")[0] == REJECT
    assert one(-0.01, 0.2, held="held by guardrail tokens") == (CONTINUE, "collecting: planned sample not reached")


def test_a_guardrail_is_read_against_its_margin_in_its_own_direction():
    # increase is good: non-inferior when the CS lies above -margin, breached when wholly below
    # it; CS [-0.05, 0.5] against -0.1: above; [-0.02, 0.3] against -0.01: across; [-0.3, -0.2]
    # against -0.1: wholly below
    v = guardrail_verdict([-0.05, -0.02, -0.3], [0.5, 0.3, -0.2], 1, [0.1, 0.01, 0.1])
    assert v.verdict.tolist() == [NON_INFERIOR, NOT_YET_SHOWN, BREACHED] and v.boundary.tolist() == [-0.1, -0.01, -0.1]
    # tokens, decrease is good: the difference CS [-5, 40] against +30 (across: not yet shown),
    # +50 (below: non-inferior), and [35, 40] against +30 (wholly above: breached); no sign flip
    v = guardrail_verdict([-5.0, -5.0, 35.0], [40.0, 40.0, 40.0], -1, [30.0, 50.0, 30.0])
    assert v.verdict.tolist() == [NOT_YET_SHOWN, NON_INFERIOR, BREACHED] and v.boundary.tolist() == [30.0, 50.0, 30.0]
    # exactly at minus the margin is neither above it nor beyond it
    assert guardrail_verdict(-0.1, 0.2, 1, 0.1).verdict.tolist() == NOT_YET_SHOWN
    assert guardrail_verdict(-0.3, -0.1, 1, 0.1).verdict.tolist() == NOT_YET_SHOWN
    # zero variance and equal arms: no CS, and the difference is exactly zero: non-inferior
    assert guardrail_verdict(np.nan, np.nan, -1, 30.0, constant_equal=True).verdict.tolist() == NON_INFERIOR


def test_an_undefined_guardrail_interval_is_not_yet_shown():
    v = guardrail_verdict([np.nan, 0.1, -0.01], [np.nan, np.nan, 0.3], [1, -1, 1], 0.5)
    assert v.verdict.tolist() == [NOT_YET_SHOWN, NOT_YET_SHOWN, NON_INFERIOR]


# Rule 5
def test_rule5_no_effect_and_inconclusive_only_at_planned_sample():
    assert one(-0.03, 0.04, plan_reached=True) == (NO_EFFECT, "planned sample reached; CS inside (-MDE, +MDE)")
    assert one(-0.03, 0.06, plan_reached=True) == (
        INCONCLUSIVE, "planned sample reached; CS neither excludes zero nor lies inside (-MDE, +MDE)")
    # before the planned sample, never no_effect (the sample-size brake)
    assert one(-0.03, 0.04)[0] == CONTINUE


def test_rule5_after_rule3_and_4():
    assert one(0.01, 0.04, plan_reached=True)[0] == ADOPT
    assert one(-0.04, -0.01, plan_reached=True)[0] == REJECT


def test_no_effect_reads_the_mde_without_its_sign_and_both_ends_turned():
    # direction -1: [-0.03, 0.04] becomes [-0.04, 0.03] in the beneficial direction, inside
    # (-0.05, 0.05) at the planned sample: no_effect; a signed MDE of -0.05 reads as 0.05
    assert one(-0.03, 0.04, direction=-1, plan_reached=True)[0] == NO_EFFECT
    assert one(-0.03, 0.04, mde=-0.05, plan_reached=True)[0] == NO_EFFECT
    assert one(-0.03, 0.045, direction=-1, mde=0.04, plan_reached=True)[0] == INCONCLUSIVE


# Rule 6
def test_rule6_continue_otherwise_and_says_when_the_plan_is_unreachable():
    assert one(-0.1, 0.2) == (CONTINUE, "collecting: planned sample not reached")
    assert one(-0.1, 0.2, plan_reachable=False) == (
        CONTINUE, "collecting: the planned sample is unreachable, so only adopt or reject can end the experiment")
    assert decide(Evidence(-0.1, 0.2, 0.05)).rule.tolist() == 6


# Edge cases
def test_nan_interval_never_decides():
    for kw in ({}, dict(plan_reached=True)):
        label, reason = one(np.nan, np.nan, **kw)
        assert label == CONTINUE and reason.startswith("interval undefined")
    # one end missing is as undefined as both, in either direction (the other end alone would
    # show a benefit: 0.1 > 0)
    for lo, hi in ((np.nan, 0.2), (0.1, np.nan)):
        for direction in (1, -1):
            label, reason = one(lo * direction, hi * direction, direction=direction, plan_reached=True)
            assert label == CONTINUE and reason.startswith("interval undefined")


def test_reversed_interval_for_decrease_metric():
    # with direction -1, [lo, hi] maps to [-hi, -lo]
    assert one(-0.3, -0.1, direction=-1)[0] == ADOPT


def test_vectorised_rows_match_single_calls():
    lo = np.array([0.01, -0.2, -0.03, -0.03, np.nan, 0.1, 0.1])
    hi = np.array([0.2, -0.01, 0.04, 0.06, np.nan, 0.2, 0.2])
    reached = np.array([False, False, True, True, True, False, False])
    invalid = np.array(["", "", "", "", "", "sequential SRM fired", ""], dtype=object)
    held = np.array(["", "", "", "", "", "", "held by guardrail g"], dtype=object)
    d = decide(Evidence(lo, hi, 0.05, invalid=invalid, held=held, plan_reached=reached))
    assert list(d.label) == [ADOPT, REJECT, NO_EFFECT, INCONCLUSIVE, CONTINUE, INVALID, CONTINUE]
    assert d.rule.tolist() == [4, 3, 5, 5, 6, 1, 4]
    for i in range(lo.size):
        assert one(lo[i], hi[i], invalid=invalid[i], held=held[i], plan_reached=reached[i])[0] == d.label[i]
