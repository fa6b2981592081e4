"""Tests for zcl_assets.stats.sequential (asymptotic confidence sequences).

``confidence_sequence`` (``tests/stats/references.py``) assembles the CS of one pair of arms
from the module's functions, as the look does from its strata; the figures are the papers'.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.stats.references import ConfidenceSequence, confidence_sequence
from zcl_assets.stats.sequential import anytime_pvalue, cs_halfwidth, optimal_rho


def paper_halfwidth(sigma2, n, rho, alpha):
    """Waudby-Smith et al. (2024), Thm 2.2, written out with the math module."""
    return math.sqrt(
        sigma2 * 2 * (n * rho**2 + 1) / (n**2 * rho**2)
        * math.log(math.sqrt(n * rho**2 + 1) / alpha)
    )


def test_reference_value_recomputed_from_paper_formula():
    # 550/1000 vs 500/1000 successes, alpha 0.05, planned 1000 per arm (N* = 2000).
    n_t, p_t, n_c, p_c, alpha = 1000, 0.55, 1000, 0.50, 0.05
    rho = math.sqrt((-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / 2000)
    sigma2 = (p_t * (1 - p_t) / n_t + p_c * (1 - p_c) / n_c) * (n_t + n_c)
    hw = paper_halfwidth(sigma2, n_t + n_c, rho, alpha)
    cs = confidence_sequence(n_t, p_t, p_t * (1 - p_t), n_c, p_c, p_c * (1 - p_c), alpha, 1000)
    assert isinstance(cs, ConfidenceSequence)
    assert float(cs.rho) == pytest.approx(rho, rel=1e-12)
    assert float(cs.rho) == pytest.approx(0.06299267657, rel=1e-9)  # by hand: sqrt(7.936156 / 2000)
    assert float(cs.diff) == pytest.approx(0.05, abs=1e-12)
    assert float(cs.ci_low) == pytest.approx(0.05 - hw, rel=1e-12)
    assert float(cs.ci_high) == pytest.approx(0.05 + hw, rel=1e-12)
    assert hw == pytest.approx(0.06769945032, rel=1e-9)  # by hand: sqrt(0.995 * 0.0046063)


def test_rho_makes_boundary_tightest_at_planned_sample():
    alpha, n_star = 0.05, 5000.0
    rho = float(optimal_rho(alpha, n_star))
    at_opt = cs_halfwidth(1.0, n_star, rho, alpha)
    for factor in (0.7, 0.9, 1.1, 1.4):
        assert cs_halfwidth(1.0, n_star, rho * factor, alpha) > at_opt
    # allocation: N* = n_plan * (1 + ratio)
    cs = confidence_sequence(100, 0, 1, 200, 0, 1, alpha, n_plan=2500, allocation_ratio=1.0)
    assert float(cs.rho) == pytest.approx(rho)
    # a planned sample read from a DECIMAL column (decimal.Decimal) tunes rho the same way
    from decimal import Decimal

    cs = confidence_sequence(100, 0, 1, 200, 0, 1, alpha, n_plan=Decimal("2500"), allocation_ratio=1.0)
    assert float(cs.rho) == pytest.approx(rho)
    # and the arm figures too: 0.5 - 0.4 = 0.1 with the half-width of N = 300, sigma2 = 300 *
    # (0.25 / 100 + 0.24 / 200) = 1.11 (Waudby-Smith et al. 2024, Thm 2.2)
    cs = confidence_sequence(*(Decimal(v) for v in ("100", "0.5", "0.25", "200", "0.4", "0.24")), alpha, n_plan=2500)
    half = paper_halfwidth(300 * (0.25 / 100 + 0.24 / 200), 300, rho, alpha)
    assert float(cs.diff) == pytest.approx(0.1, rel=1e-12)
    assert float(cs.ci_high) - float(cs.diff) == pytest.approx(half, rel=1e-9)


def test_width_shrinks_like_sqrt_log_n_over_n():
    rho = float(optimal_rho(0.05, 1000))
    n = np.array([1e6, 1e8, 1e10, 1e12])
    scaled = cs_halfwidth(1.0, n, rho, 0.05) / np.sqrt(np.log(n) / n)
    # tends to a constant: successive ratios approach 1
    ratios = scaled[1:] / scaled[:-1]
    assert np.all(np.abs(ratios - 1) < 0.06)
    assert abs(ratios[-1] - 1) < abs(ratios[0] - 1)
    assert np.all(np.diff(cs_halfwidth(1.0, n, rho, 0.05)) < 0)


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
def test_wider_than_fixed_horizon_interval_at_every_n(alpha):
    n = np.unique(np.round(np.geomspace(2, 1e7, 400)))
    rho = float(optimal_rho(alpha, 1000))
    fixed = stats.norm.ppf(1 - alpha / 2) / np.sqrt(n)
    assert np.all(cs_halfwidth(1.0, n, rho, alpha) > fixed)


def test_pvalue_consistent_with_interval():
    rng = np.random.default_rng(3)
    k = 2000
    n_t = rng.integers(50, 5000, k)
    n_c = rng.integers(50, 5000, k)
    mean_t = rng.normal(0.1, 0.2, k)
    cs = confidence_sequence(n_t, mean_t, 1.0, n_c, 0.0, 1.5, 0.05, 1000)
    assert np.all((cs.pvalue >= 0) & (cs.pvalue <= 1))
    excludes = (cs.ci_low > 0) | (cs.ci_high < 0)
    np.testing.assert_array_equal(excludes, cs.pvalue < 0.05)
    # At alpha = p the boundary touches zero (same rho).
    inside = cs.pvalue < 1
    hw = cs_halfwidth(
        (1.0 / n_t + 1.5 / n_c) * (n_t + n_c), n_t + n_c, cs.rho, cs.pvalue
    )
    np.testing.assert_allclose(hw[inside], np.abs(cs.diff[inside]), rtol=1e-9)


def test_binary_uses_p_times_one_minus_p():
    cs = confidence_sequence(400, 0.6, 0.24, 400, 0.5, 0.25, 0.05, 400)
    sigma2 = (0.24 / 400 + 0.25 / 400) * 800
    hw = paper_halfwidth(sigma2, 800, float(cs.rho), 0.05)
    assert float(cs.ci_high - cs.ci_low) == pytest.approx(2 * hw)


def test_vectorised_broadcasting():
    cs = confidence_sequence(
        np.array([[100], [1000]]), np.array([0.1, 0.2, 0.3]), 1.0, 100, 0.0, 1.0, 0.05, 500
    )
    for field in cs:
        assert field.shape == (2, 3)


@pytest.mark.parametrize(
    "args",
    [
        (0, 0.5, 0.25, 100, 0.5, 0.25),  # empty arm
        (100, np.nan, 0.25, 100, 0.5, 0.25),  # NaN mean
        (100, 0.5, 0.0, 100, 0.5, 0.0),  # zero variance in both arms (e.g. 0/100 vs 0/100)
        (100, 0.5, np.inf, 100, 0.5, 0.25),  # infinite variance
        (100, 0.5, -1.0, 100, 0.5, 0.25),  # negative variance
        (np.nan, 0.5, 0.25, 100, 0.5, 0.25),  # NaN count
        (100, np.inf, 0.25, 100, 0.5, 0.25),  # infinite mean
    ],
)
def test_degenerate_inputs_give_nan_interval(args):
    cs = confidence_sequence(*args, 0.05, 100)
    assert np.isnan(cs.ci_low) and np.isnan(cs.ci_high) and np.isnan(cs.pvalue)


@pytest.mark.parametrize("alpha,n_plan", [(0.0, 100), (1.0, 100), (np.nan, 100), (0.05, 0),
                                          (0.05, np.inf), (0.05, -5)])
def test_invalid_design_gives_nan_not_exception(alpha, n_plan):
    cs = confidence_sequence(100, 0.6, 0.24, 100, 0.5, 0.25, alpha, n_plan)
    assert np.isnan(cs.rho) and np.isnan(cs.ci_low) and np.isnan(cs.pvalue)
    assert float(cs.diff) == pytest.approx(0.1)


def test_zero_variance_in_one_arm_is_fine():
    cs = confidence_sequence(100, 0.0, 0.0, 100, 0.5, 0.25, 0.05, 100)
    assert np.isfinite(cs.ci_low) and cs.ci_high < 0


def test_a_negative_variance_spoils_only_its_own_comparison():
    """A negative variance in either arm gives a NaN interval there, while the valid comparisons
    beside it in the same call keep the interval of the paper's formula."""
    # element 0: the reference case above (550/1000 vs 500/1000); element 1: a negative treatment
    # variance; element 2: a negative control variance. In 1 and 2 the other arm's variance alone
    # keeps se^2 positive (-0.01/1000 + 0.25/1000 > 0), so only the sign check can reject them.
    cs = confidence_sequence(1000, 0.55, [0.2475, -0.01, 0.2475], 1000, 0.50, [0.25, 0.25, -0.01], 0.05, 1000)
    rho = math.sqrt((-2 * math.log(0.05) + math.log(-2 * math.log(0.05) + 1)) / 2000)
    hw = paper_halfwidth((0.2475 / 1000 + 0.25 / 1000) * 2000, 2000, rho, 0.05)
    assert float(cs.ci_low[0]) == pytest.approx(0.05 - hw, rel=1e-12)
    assert float(cs.ci_high[0]) == pytest.approx(0.05 + hw, rel=1e-12)
    assert np.isfinite(cs.pvalue[0])
    for field in (cs.ci_low, cs.ci_high, cs.pvalue):
        assert np.isnan(field[1:]).all()
    assert cs.diff[1:] == pytest.approx([0.05, 0.05])  # the difference itself needs no variance


def test_a_missing_allocation_ratio_gives_nan_not_an_exception():
    # A null ratio read from the warehouse arrives as None: invalid design, NaN interval (the
    # docstring: no exception for data values), the difference itself still reported.
    cs = confidence_sequence(100, 0.6, 0.24, 100, 0.5, 0.25, 0.05, 100, allocation_ratio=None)
    assert np.isnan(cs.rho) and np.isnan(cs.ci_low) and np.isnan(cs.ci_high) and np.isnan(cs.pvalue)
    assert float(cs.diff) == pytest.approx(0.1)


@pytest.mark.parametrize("n_t,n_c", [(100, 0), (0, 100)])
def test_a_cs_with_an_empty_arm_is_undefined(n_t, n_c):
    cs = confidence_sequence(n_t, 0.5, 0.25, n_c, 0.5, 0.25, 0.05, 1000)
    assert np.isnan([cs.diff, cs.ci_low, cs.ci_high, cs.pvalue]).all() and cs.rho > 0


def test_a_halfwidth_needs_a_level_strictly_between_0_and_1():
    # alpha = 1 would give a finite width (log 1 = 0), alpha = 0 an infinite one: both undefined
    from zcl_assets.stats.sequential import cs_halfwidth

    got = cs_halfwidth(1.0, 1000.0, 0.05, [0.0, 1.0, 1.5, -0.1, 0.05])
    assert np.isnan(got[:4]).all() and np.isfinite(got[4])


def test_a_halfwidth_needs_units_a_variance_and_a_mixing_parameter():
    # N = 0 would divide by zero (an infinite width), sigma2 = 0 or rho = 0 give no width:
    # each is outside the domain of Thm 2.2, and the half-width is undefined there
    from zcl_assets.stats.sequential import cs_halfwidth

    got = cs_halfwidth([1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 10, -1, 10, 10, np.inf, 10],
                       [0.5, 0.5, 0.5, 0.0, -1.0, 0.5, 0.5], 0.05)
    assert np.isnan(got[:6]).all()
    assert got[6] == pytest.approx(paper_halfwidth(1.0, 10, 0.5, 0.05), rel=1e-12)


def paper_pvalue(diff, sigma2, n, rho):
    """Howard et al. (2021), sec. 3.5: the normal-mixture martingale's p-value, with math."""
    v = n * rho**2 + 1
    return min(1.0, math.sqrt(v) * math.exp(-(diff**2) * n**2 * rho**2 / (2 * sigma2 * v)))


def test_anytime_pvalue_is_the_mixture_martingale_and_the_dual_of_the_cs():
    # by hand for diff 0.5, sigma2 1, N 100, rho 0.5: v = 26, p = sqrt(26) exp(-625 / 52)
    # = 5.0990 * 6.0272e-6 = 3.0733e-5; a small difference gives p = 1 (capped)
    assert float(anytime_pvalue(0.5, 1.0, 100, 0.5)) == pytest.approx(math.sqrt(26) * math.exp(-625 / 52), rel=1e-12)
    assert float(anytime_pvalue(0.5, 1.0, 100, 0.5)) == pytest.approx(3.0733e-5, rel=1e-4)
    assert float(anytime_pvalue(0.01, 1.0, 100, 0.5)) == 1.0
    rng = np.random.default_rng(3)
    diff, sigma2 = rng.normal(0, 0.3, 400), rng.uniform(0.1, 4.0, 400)
    n, rho = rng.integers(10, 5000, 400).astype(float), rng.uniform(0.05, 2.0, 400)
    p = anytime_pvalue(diff, sigma2, n, rho)
    assert p == pytest.approx([paper_pvalue(*row) for row in zip(diff, sigma2, n, rho)], rel=1e-10)
    # p < a exactly when the CS at level a excludes zero
    for a in (0.01, 0.05, 0.2):
        assert np.array_equal(p < a, np.abs(diff) > cs_halfwidth(sigma2, n, rho, a))


def test_anytime_pvalue_is_undefined_outside_its_domain():
    bad = [(np.nan, 1.0, 100, 0.5), (0.1, 0.0, 100, 0.5), (0.1, 1.0, 0, 0.5), (0.1, 1.0, 100, 0.0),
           (0.1, 1.0, 100, np.inf), (0.1, -1.0, 100, 0.5)]
    diff, sigma2, n, rho = (np.array(col, dtype=float) for col in zip(*bad))
    assert np.isnan(anytime_pvalue(diff, sigma2, n, rho)).all()


def test_anytime_pvalue_takes_decimal_inputs():
    # values read from a DECIMAL column arrive as decimal.Decimal: they are converted first
    from decimal import Decimal

    got = anytime_pvalue(Decimal("0.5"), Decimal("1"), Decimal("100"), Decimal("0.5"))
    assert float(got) == pytest.approx(math.sqrt(26) * math.exp(-625 / 52), rel=1e-12)
