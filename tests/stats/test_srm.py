"""Tests for zcl_assets.stats.srm."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import comb

from zcl_assets.stats.srm import srm_chisquare, srm_constancy, srm_sequential


def test_chisquare_references():
    # R: chisq.test(c(550, 450), p = c(0.5, 0.5)) -> X-squared = 10, p-value = 0.001565
    res = srm_chisquare([550, 450], [0.5, 0.5])
    assert res.statistic == pytest.approx(10.0, rel=1e-12)
    assert res.pvalue == pytest.approx(0.001565402, abs=5e-10)
    # three arms, 1:2:1: expected 250, 500, 250; X2 = 1.6 + 0.8 + 6.4 = 8.8;
    # df 2, so p = exp(-8.8 / 2) = 0.0122773399
    res = srm_chisquare([230, 480, 290], [1, 2, 1])
    assert res.statistic == pytest.approx(8.8, rel=1e-12)
    assert res.pvalue == pytest.approx(np.exp(-4.4), rel=1e-12)


def test_chisquare_vectorised_matches_scipy_and_degenerate():
    counts = np.array([[100, 210, 90], [0, 0, 0], [5, 7, 9]])
    res = srm_chisquare(counts, [0.25, 0.5, 0.25])
    ref = stats.chisquare(counts[0], counts[0].sum() * np.array([0.25, 0.5, 0.25]))
    assert res.pvalue[0] == pytest.approx(ref.pvalue, rel=1e-12)
    assert np.isnan(res.statistic[1]) and np.isnan(res.pvalue[1])  # no units yet
    assert np.isnan(srm_chisquare([np.nan, 3], [0.5, 0.5]).pvalue)
    with pytest.raises(ValueError):
        srm_chisquare([-1, 3], [0.5, 0.5])
    with pytest.raises(ValueError):
        srm_chisquare([1, 3], [0.0, 1.0])


def test_sequential_bayes_factor_closed_form():
    # k = 2, shares 1/2, concentration 2 -> uniform Beta(1, 1) prior:
    # BF = 2^n * B(x + 1, n - x + 1) = 2^n / ((n + 1) * C(n, x)); x = 8, n = 10: 1024 / 495 = 2.0686869
    res = srm_sequential([8, 2], [0.5, 0.5], prior_concentration=2.0)
    assert res.bayes_factor == pytest.approx(2**10 / (11 * comb(10, 8)), rel=1e-12)
    assert res.bayes_factor == pytest.approx(2.0686869, abs=5e-8)
    assert res.pvalue == pytest.approx(495 / 1024, rel=1e-12)


def test_sequential_decisive_for_strong_imbalance():
    res = srm_sequential([600, 400], [0.5, 0.5])
    assert res.pvalue < 1e-6
    assert srm_sequential([5000, 5000], [0.5, 0.5]).pvalue == 1.0


def test_sequential_running_min_and_degenerate():
    looks = np.array([[10, 10], [60, 40], [100, 100]])
    res = srm_sequential(looks, [0.5, 0.5], looks_axis=0)
    assert np.all(np.diff(res.pvalue) <= 0)
    assert res.pvalue[2] == pytest.approx(min(1, 1 / res.bayes_factor[1]))
    empty = srm_sequential([0, 0], [0.5, 0.5])
    assert empty.bayes_factor == 1.0 and empty.pvalue == 1.0
    assert np.isnan(srm_sequential([np.nan, 1], [0.5, 0.5]).pvalue)
    for bad in (0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="^prior_concentration must be positive and finite$"):
            srm_sequential([1, 2], [0.5, 0.5], prior_concentration=bad)
    with pytest.raises(ValueError, match="^looks_axis must not be the arm axis$"):
        srm_sequential(looks, [0.5, 0.5], looks_axis=-1)


def test_sequential_null_false_positive_rate_nightly_looks():
    """Seeded null simulation: 2000 experiments x 60 nightly looks, 1:2 split.

    Rejecting when the running anytime-valid p < 0.05 at any look must keep
    the false-positive rate <= 0.05. Monte Carlo s.e. at 0.05 is
    sqrt(0.05 * 0.95 / 2000) = 0.0049; we assert <= 0.05 + 3 s.e. = 0.065.
    (Observed rate is far lower: the test is conservative.)
    """
    rng = np.random.default_rng(20260101)
    n_exp, n_looks = 2000, 60
    shares = np.array([1 / 3, 2 / 3])
    nightly = rng.multinomial(150, shares, size=(n_exp, n_looks))
    cum = nightly.cumsum(axis=1)
    res = srm_sequential(cum, shares, looks_axis=1)
    fired = (res.pvalue[:, -1] < 0.05).mean()
    assert fired <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_exp)


@pytest.mark.parametrize("test", ["sequential", "constancy"])
def test_a_look_with_a_missing_count_ends_its_experiment_there_and_spares_the_others(test):
    # Two experiments in one call (looks on axis 1): the first loses a count at look 2, so its
    # p-values are NaN from there on (a running minimum past a missing look is not trustworthy),
    # while its first two looks and the whole of the other experiment read as they do alone.
    cum = np.array([[[50, 50], [100, 104], [np.nan, 150], [200, 210], [260, 250]],
                    [[50, 52], [101, 99], [150, 149], [199, 201], [240, 262]]], dtype=float)

    def run(counts, axis):
        if test == "sequential":
            return srm_sequential(counts, [0.5, 0.5], 100.0, looks_axis=axis).pvalue
        return srm_constancy(counts, looks_axis=axis).pvalue

    both = run(cum, 1)
    np.testing.assert_allclose(both[0, :2], run(cum[0, :2], 0), rtol=1e-12)
    assert np.isnan(both[0, 2:]).all()
    np.testing.assert_allclose(both[1], run(cum[1], 0), rtol=1e-12)
    assert np.isfinite(both[1]).all()


def test_the_prior_concentration_tuned_at_a_planned_sample_by_its_formula():
    # c = n* / (-2 log alpha + log(1 - 2 log alpha)) - 1, at least 1 (the docstring's formula,
    # Howard et al. 2021 Sec. 3.5 tuning carried to the Dirichlet prior), by hand at alpha 0.01
    from zcl_assets.stats.srm import tuned_concentration

    two = -2 * np.log(0.01)
    assert float(tuned_concentration(10000.0, 0.01)) == pytest.approx(10000.0 / (two + np.log(1 + two)) - 1, rel=1e-12)
    assert float(tuned_concentration(5.0, 0.01)) == 1.0  # a tiny plan: the floor


def test_shares_per_row_are_each_rows_own_plan():
    # one row per experiment, each with its own allocation (shape (2, 3) like the counts):
    # every row against scipy.stats.chisquare with that row's expected counts
    counts = np.array([[230.0, 480.0, 290.0], [100.0, 100.0, 100.0]])
    shares = np.array([[1.0, 2.0, 1.0], [0.2, 0.5, 0.3]])
    res = srm_chisquare(counts, shares)
    for row, c, s in zip(range(2), counts, shares):
        ref = stats.chisquare(c, c.sum() * s / s.sum())
        assert (res.statistic[row], res.pvalue[row]) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    with pytest.raises(ValueError, match="^shares must have last dimension 3$"):
        srm_chisquare(counts, shares[:, :2])


def test_a_plan_of_at_most_one_unit_takes_the_floor_not_the_fallback():
    # c = n* / (...) - 1 is below the floor 1 for any n* in (0, 1]: the floor, not the fallback
    # of 100 kept for unknown plans
    from zcl_assets.stats.srm import DEFAULT_PRIOR_CONCENTRATION, tuned_concentration

    assert tuned_concentration([0.5, 1.0], 0.01).tolist() == [1.0, 1.0]
    assert tuned_concentration([0.0, np.nan, np.inf], 0.01).tolist() == [DEFAULT_PRIOR_CONCENTRATION] * 3


def test_the_constancy_test_names_each_bad_argument():
    looks = np.array([[10.0, 10.0], [20.0, 25.0]])
    for counts in ([10.0, 10.0], [[1.0], [2.0]]):  # one look only; one arm only
        with pytest.raises(ValueError, match=r"^counts must have shape \(\.\.\., looks, k\) with k >= 2$"):
            srm_constancy(counts)
    with pytest.raises(ValueError, match="^window must be a positive integer, got 0$"):
        srm_constancy(looks, window=0)
    with pytest.raises(ValueError, match="^looks_axis must not be the arm axis$"):
        srm_constancy(looks, looks_axis=1)


def test_the_chi_square_refuses_fewer_than_two_arms_by_name():
    with pytest.raises(ValueError, match=r"^counts must have shape \(\.\.\., k\) with k >= 2$"):
        srm_chisquare([10], [1.0])


def test_the_chi_square_of_a_single_unit_is_defined():
    # one unit in arm 1 of a 50/50 split: (1 - 0.5)^2 / 0.5 + (0 - 0.5)^2 / 0.5 = 1, p = 0.3173
    # (scipy.stats.chisquare([1, 0], [0.5, 0.5])); only no unit at all leaves it undefined
    res = srm_chisquare([1, 0], [0.5, 0.5])
    assert float(res.statistic) == pytest.approx(1.0, rel=1e-12)
    assert float(res.pvalue) == pytest.approx(0.31731050786291115, rel=1e-12)


def test_the_constancy_e_value_of_one_look_by_hand():
    # Looks [5, 5] then [6, 7]: the first look seeds the prediction (5.5 / 11 = 1/2 each arm);
    # the 3 arrivals [1, 2] are predicted at (1/2)^3 and fit best at their own split (1/3, 2/3):
    # E = (1/8) / ((1/3) (2/3)^2) = 27/32 (Wasserman, Ramdas and Balakrishnan 2020, split LRT)
    res = srm_constancy([[5, 5], [6, 7]])
    np.testing.assert_allclose(res.bayes_factor, [1.0, 27 / 32], rtol=1e-12)
    np.testing.assert_allclose(res.pvalue, [1.0, 1.0])
