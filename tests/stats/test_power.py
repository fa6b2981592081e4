"""Tests for zcl_assets.stats.power."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower

from zcl_assets.stats.power import (
    R_POWERS,
    R_TABLE,
    inflation_at,
    n_fixed,
    per_test_power,
    planned_sample,
    power_at,
)

Z_A = stats.norm.ppf(0.975)  # 1.959964
Z_B = stats.norm.ppf(0.80)  # 0.841621


def test_two_sample_binary_0_50_to_0_60_is_385_per_arm():
    # n = (z_{.975} + z_{.80})^2 (p1 q1 + p2 q2) / d^2 = 7.8489 * 0.49 / 0.01 = 384.595
    expected = (Z_A + Z_B) ** 2 * (0.5 * 0.5 + 0.6 * 0.4) / 0.1**2
    n = n_fixed(0.5, 0.1, 0.05, 0.8)
    assert float(n) == pytest.approx(expected, rel=1e-12)
    assert float(n) == pytest.approx(384.5951, abs=1e-4)
    assert math.ceil(n) == 385
    # The pooled-null textbook variant: (z_a sqrt(2 pbar qbar) + z_b sqrt(p1q1+p2q2))^2/d^2
    pooled = (Z_A * math.sqrt(2 * 0.55 * 0.45) + Z_B * math.sqrt(0.49)) ** 2 / 0.01
    assert math.ceil(pooled) == 388
    assert 385 <= math.ceil(n) <= math.ceil(pooled) <= 388


def test_seed_note_194_is_the_one_sample_formula():
    # One-sample test of p = 0.5 against 0.6: (z_a sqrt(p0 q0) + z_b sqrt(p1 q1))^2 / d^2
    one_sample = (Z_A * math.sqrt(0.25) + Z_B * math.sqrt(0.24)) ** 2 / 0.01
    assert math.ceil(one_sample) == 194
    # The two-sample figure is about twice as large.
    assert float(n_fixed(0.5, 0.1, 0.05, 0.8)) / one_sample == pytest.approx(1.98, abs=0.01)


def test_continuous_matches_statsmodels_normal_ind_power():
    # statsmodels: effect size normalised by the sd; nobs1 = control arm; ratio = n2/n1.
    for ratio in (1.0, 2.0, 0.5):
        n = float(n_fixed(10.0, 2.0, 0.05, 0.8, ratio, baseline_sd=5.0, metric="continuous"))
        pw_sm = NormalIndPower().power(effect_size=2.0 / 5.0, nobs1=n, alpha=0.05, ratio=ratio)
        # ours drops the far tail in n_fixed (standard), so statsmodels' power is >= 0.8
        assert pw_sm == pytest.approx(0.8, abs=1e-6)
        pw = power_at(n, 2.0, 10.0, 0.05, ratio, baseline_sd=5.0, metric="continuous",
                      inflation=1.0)
        assert float(pw) == pytest.approx(pw_sm, rel=1e-10)
        n_sm = NormalIndPower().solve_power(effect_size=0.4, alpha=0.05, power=0.8, ratio=ratio)
        assert n == pytest.approx(n_sm, rel=1e-4)


def test_binary_direction_and_allocation():
    # decrease from 0.5 by 0.1: variance at 0.4 equals that at 0.6
    down, up = n_fixed(0.5, -0.1, 0.05, 0.8), n_fixed(0.5, 0.1, 0.05, 0.8)
    assert float(down) == pytest.approx(float(up))
    # ratio 2: n_c = z^2 (p1q1 + p2q2 / 2) / d^2
    expected = (Z_A + Z_B) ** 2 * (0.25 + 0.24 / 2) / 0.01
    assert float(n_fixed(0.5, 0.1, 0.05, 0.8, allocation_ratio=2)) == pytest.approx(expected)


def test_planned_sample_formula():
    nf = float(n_fixed(0.5, 0.1, 0.05, 0.8))
    p = planned_sample(0.5, 0.1, 0.05, 0.8, min_samples=100, verified_share=0.8)
    r = R_TABLE[0.05][R_POWERS.index(0.8)]  # the calibrated cell of alpha 0.05, power 0.80
    assert float(p.n_plan) == math.ceil(r * nf / 0.8)
    assert bool(p.reachable) and p.reason == ""
    assert float(p.inflation) == r
    # never below the declared minimum
    assert float(planned_sample(0.5, 0.1, 0.05, 0.8, min_samples=5000).n_plan) == 5000
    # vectorised
    many = planned_sample(np.array([0.2, 0.5]), np.array([[0.05], [0.1]]), 0.05, 0.8, 100)
    assert many.n_plan.shape == (2, 2)


def test_guardrails_split_type_two_error():
    assert float(per_test_power(0.8, 0)) == pytest.approx(0.8)
    assert float(per_test_power(0.8, 3)) == pytest.approx(0.95)
    p0 = planned_sample(0.5, 0.1, 0.05, 0.8, 1)
    p3 = planned_sample(0.5, 0.1, 0.05, per_test_power(0.8, 3), 1)  # as the registration plans with 3
    assert float(p3.n_fixed) == pytest.approx(float(n_fixed(0.5, 0.1, 0.05, 0.95)))
    assert p3.n_plan > p0.n_plan


@pytest.mark.parametrize(
    "kwargs,reason",
    [
        (dict(mde=0.0), "MDE is zero or not finite"),
        (dict(mde=np.nan), "MDE is zero or not finite"),
        (dict(mde=np.inf), "MDE is zero or not finite"),
        (dict(verified_share=0.0), "verified share not in (0, 1]"),
        (dict(verified_share=1.5), "verified share not in (0, 1]"),  # a share above 1 is no share
        (dict(mde=0.6), "baseline plus MDE not in (0, 1)"),
        (dict(baseline_mean=0.0), "baseline proportion not in (0, 1)"),
        (dict(alpha=0.0), "alpha not in (0, 1)"),
        (dict(alpha=1.0), "alpha not in (0, 1)"),
        (dict(power=1.0), "power not in (0, 1)"),  # power 1 needs an infinite sample
        (dict(power=0.0), "power not in (0, 1)"),
        (dict(inflation=0.0), "inflation not positive and finite"),
    ],
)
def test_unreachable_plans_are_flagged_not_raised(kwargs, reason):
    args = dict(baseline_mean=0.5, mde=0.1, alpha=0.05, power=0.8, min_samples=100)
    args.update(kwargs)
    p = planned_sample(**args)
    assert not bool(p.reachable)
    assert p.reason == reason
    assert np.isinf(p.n_plan)


def test_continuous_needs_sd():
    p = planned_sample(10.0, 2.0, 0.05, 0.8, 10, metric="continuous")
    assert not bool(p.reachable) and "sd" in str(p.reason)
    with pytest.raises(ValueError):
        n_fixed(0.5, 0.1, 0.05, 0.8, metric="ratio")


def test_power_at_round_trips_and_is_for_the_mde():
    nf = float(n_fixed(0.5, 0.1, 0.05, 0.8))
    # fixed-horizon power at n_fixed is the target (plus the negligible far tail)
    assert float(power_at(nf, 0.1, 0.5, 0.05, inflation=1.0)) == pytest.approx(0.8, abs=1e-3)
    # with R: power at the planned sample is the registered power
    n_plan = R_TABLE[0.05][R_POWERS.index(0.8)] * nf
    assert float(power_at(n_plan, 0.1, 0.5, 0.05)) == pytest.approx(0.8, abs=1e-3)
    assert float(power_at(0, 0.1, 0.5, 0.05)) == 0.0
    assert np.isnan(power_at(100, 0.1, 0.5, 1.5))






def test_r_at_alpha_05_is_in_the_design_range():
    # DESIGN section 6: about 1.5 to 1.7 at alpha .05; the earlier single calibration gave 1.7232
    # (s.e. 0.0022) at alpha .05, power .80, 30 looks; the table's cell is its upper MC bound.
    assert 1.7232 <= float(inflation_at(0.05, 0.8)) <= 1.7232 + 3 * 0.0022


def _cs_power(r, alpha, power, n_paths=40_000, looks=30, first=7, seed=5):
    """Share of paths whose CS lower bound exceeds 0 at some look up to N_plan = r n_fixed.

    Written out independently of the product: unit-variance outcomes in two equal arms,
    n_fixed per arm 1 (so the MDE is sqrt(2) (z_{1-alpha/2} + z_power)), per-arm sample r k /
    looks at look k; the normal-mixture CS of Waudby-Smith et al. (2024), Theorem 2.2, tuned at
    the planned total 2 r: rho^2 = (-2 log a + log(1 - 2 log a)) / N*, half-width
    sqrt(s2 2 (N rho^2 + 1) / (N^2 rho^2) log(sqrt(N rho^2 + 1) / a)) with s2 = N se^2 = 4.
    """
    rng = np.random.default_rng(seed)
    mde = math.sqrt(2) * (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    n_arm = r * np.arange(1, looks + 1) / looks
    step = r / looks
    sums = np.cumsum(rng.normal(mde * step, math.sqrt(2 * step), size=(n_paths, looks)), axis=1)
    diff = sums / n_arm  # difference of the arm means: sum of per-unit differences over n
    big_n = 2 * n_arm
    rho2 = (-2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))) / (2 * r)
    v = big_n * rho2 + 1
    hw = np.sqrt(4 * 2 * v / (big_n**2 * rho2) * np.log(np.sqrt(v) / alpha))
    return float(((diff - hw)[:, first - 1:] > 0).any(axis=1).mean())


@pytest.mark.parametrize("alpha, power", [(0.05, 0.8), (0.0125, 0.8), (0.0125 / 3, 0.9), (1e-4, 0.95)])
def test_the_calibrated_r_gives_the_power_it_was_calibrated_for(alpha, power):
    # The cell (interpolated off the grid) is the upper end of its MC interval: power at it is
    # the target or a little more, never 3 s.e. less (s.e. sqrt(.16 / 40,000) = 0.002 at .80).
    se = math.sqrt(power * (1 - power) / 40_000)
    reached = _cs_power(float(inflation_at(alpha, power)), alpha, power)
    assert power - 3 * se <= reached <= power + 0.015
    # and 10% less R misses it clearly
    assert _cs_power(0.9 * float(inflation_at(alpha, power)), alpha, power) < power - 5 * se


def test_inflation_is_the_table_on_its_grid_and_between_its_cells_elsewhere():
    for alpha, row in R_TABLE.items():
        assert inflation_at(alpha, np.array(R_POWERS)) == pytest.approx(np.array(row), abs=1e-12)
    mid = float(inflation_at(math.sqrt(0.05 * 0.025), 0.85))  # halfway in log alpha and in power
    cells = [R_TABLE[a][R_POWERS.index(p)] for a in (0.05, 0.025) for p in (0.8, 0.9)]
    assert mid == pytest.approx(sum(cells) / 4, abs=1e-12)
    # beyond the grid: the nearest edge (the contract admits alpha in [1e-6, 0.5], power >= 0.5)
    assert float(inflation_at(1e-12, 0.9999)) == R_TABLE[1e-8][-1]
    assert np.isnan(inflation_at(0.0, 0.8)) and np.isnan(inflation_at(0.05, 1.0))
    # a smaller level or a larger power never needs a larger R
    a = np.geomspace(1e-8, 0.5, 40)
    assert np.all(np.diff(inflation_at(a, 0.8)) >= 0)
    assert np.all(np.diff(inflation_at(0.01, np.linspace(0.5, 0.999, 40))) <= 0)






def test_an_unknown_metric_kind_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"metric must be one of \('binary', 'continuous'\), got 'ratio'"):
        power_at(1000, 0.05, 0.5, 0.05, metric="ratio")


def test_a_missing_value_read_as_none_gives_nan_not_an_exception():
    # The module promises never to raise on data values; a null read from the warehouse arrives
    # as None, which NumPy reads as NaN once the dtype is float.
    assert np.isnan(power_at(1000, 0.05, 0.5, None))
    assert np.isnan(power_at(1000, 0.05, [0.5, None], 0.05)[1])
    assert np.isnan(n_fixed(None, 0.1, 0.05, 0.8))


def test_the_plan_reports_the_design_it_was_made_with():
    # v = 0.8, R = 1.5 are echoed back, and enter N_plan = ceil(R n_fixed / v).
    p = planned_sample(0.5, 0.1, 0.05, 0.8, 10, inflation=1.5, verified_share=0.8)
    assert (float(p.verified_share), float(p.inflation)) == (0.8, 1.5)
    assert float(p.n_plan) == math.ceil(1.5 * float(n_fixed(0.5, 0.1, 0.05, 0.8)) / 0.8)


def test_an_allocation_ratio_that_is_not_positive_gives_no_sample():
    # r = 0 puts no unit in treatment: no sample size reaches the power (the docstring: r > 0)
    for ratio in (0.0, -1.0, np.inf, np.nan):
        assert np.isnan(n_fixed(0.3, 0.05, 0.05, 0.8, ratio))
        assert np.isnan(n_fixed(10.0, 2.0, 0.05, 0.8, ratio, baseline_sd=5.0, metric="continuous"))


def test_n_fixed_takes_a_decimal_baseline():
    # a baseline read from a DECIMAL column arrives as decimal.Decimal; it is converted, not
    # mixed with floats. By hand (0.50 -> 0.60, alpha 0.05, power 0.80):
    # (1.959964 + 0.841621)^2 * (0.25 + 0.24) / 0.1^2 = 7.848879 * 49 = 384.595
    from decimal import Decimal

    assert n_fixed(Decimal("0.5"), 0.1, 0.05, 0.8) == pytest.approx(384.595, abs=1e-3)
    assert power_at(385, 0.1, Decimal("0.5"), 0.05, inflation=1) == pytest.approx(0.8, abs=1e-3)
    # a continuous metric's sd too: (1.959964 + 0.841621)^2 * (25 + 25) / 2^2 = 98.111
    assert n_fixed(10.0, 2.0, 0.05, 0.8, baseline_sd=Decimal("5"), metric="continuous") == pytest.approx(98.111, abs=1e-3)




@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, np.nan])
def test_power_needs_a_level_strictly_between_0_and_1(alpha):
    # alpha = 0 would give a power of exactly 0 (an infinite critical value): undefined instead
    assert np.isnan(power_at(385, 0.1, 0.5, alpha, inflation=1))
