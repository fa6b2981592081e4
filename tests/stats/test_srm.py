"""Tests for zcl_assets.stats.srm: the grid forms against published figures and their oracles.

The oracles (``tests/stats/srm_reference.py``) are the tests written one experiment's looks at a
time, straight from their papers; the grid forms must give their figures on every experiment,
night, stratum and padded arm at once.
"""

import numpy as np
import pytest
from scipy import stats
from scipy.special import comb

from tests.stats import srm_reference as ref
from zcl_assets.stats.srm import (
    DEFAULT_PRIOR_CONCENTRATION,
    srm_chisquare,
    srm_constancy,
    srm_sequential,
    tuned_concentration,
)


def sequential(cum, shares, conc, epoch=None):
    """The grid test of one stratum: ``cum`` ``[E, D, K]`` cumulative counts, ``shares`` ``[K]``."""
    cum = np.asarray(cum, float)
    epoch = np.zeros(cum.shape[:2], dtype=np.int64) if epoch is None else np.asarray(epoch)
    counted = np.ones(cum.shape[:2] + (1,), dtype=bool)
    return srm_sequential(cum[:, :, None, :], np.asarray(shares, float)[None, None, None, :],
                          np.broadcast_to(np.asarray(conc, float), cum.shape[:2] + (1,)), epoch, counted)


def test_chisquare_references():
    # R: chisq.test(c(550, 450), p = c(0.5, 0.5)) -> X-squared = 10, p-value = 0.001565
    arms = np.ones(2, dtype=bool)
    assert srm_chisquare(np.array([550.0, 450.0]), np.array([500.0, 500.0]), arms) == pytest.approx(0.001565402, abs=5e-10)
    # three arms, 1:2:1: expected 250, 500, 250; X2 = 1.6 + 0.8 + 6.4 = 8.8;
    # df 2, so p = exp(-8.8 / 2) = 0.0122773399
    p = srm_chisquare(np.array([230.0, 480.0, 290.0]), np.array([250.0, 500.0, 250.0]), np.ones(3, dtype=bool))
    assert p == pytest.approx(np.exp(-4.4), rel=1e-12)


def test_chisquare_rows_padded_arms_and_rows_without_units():
    # row 0: three arms against scipy; row 1: two arms of three (the third padding, expected 0);
    # row 2: no units yet (undefined); row 3: one unit in arm 1 of a 50/50 split:
    # (1 - 0.5)^2 / 0.5 + (0 - 0.5)^2 / 0.5 = 1, p = 0.3173 (scipy.stats.chisquare([1, 0], [0.5, 0.5]))
    observed = np.array([[100.0, 210.0, 90.0], [60.0, 40.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    expected = np.array([[100.0, 200.0, 100.0], [50.0, 50.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    arms = np.array([[True] * 3, [True, True, False], [True, True, False], [True, True, False]])
    p = srm_chisquare(observed, expected, arms)
    assert p[0] == pytest.approx(stats.chisquare([100, 210, 90], [100, 200, 100]).pvalue, rel=1e-12)
    assert p[1] == pytest.approx(stats.chisquare([60, 40], [50, 50]).pvalue, rel=1e-12)
    assert np.isnan(p[2])
    assert p[3] == pytest.approx(0.31731050786291115, rel=1e-12)
    # the oracle agrees on every row with units
    for row in (0, 1, 3):
        k = int(arms[row].sum())
        assert p[row] == pytest.approx(float(ref.srm_chisquare(observed[row, :k], expected[row, :k]).pvalue), rel=1e-12)


def test_sequential_bayes_factor_closed_form():
    # k = 2, shares 1/2, concentration 2 -> uniform Beta(1, 1) prior:
    # BF = 2^n * B(x + 1, n - x + 1) = 2^n / ((n + 1) * C(n, x)); x = 8, n = 10: 1024 / 495 = 2.0686869
    assert 2**10 / (11 * comb(10, 8)) == pytest.approx(2.0686869, abs=5e-8)
    assert sequential([[[8, 2]]], [0.5, 0.5], 2.0)[0, 0] == pytest.approx(495 / 1024, rel=1e-12)


def test_sequential_decisive_for_strong_imbalance_and_silent_without_one():
    assert sequential([[[600, 400]]], [0.5, 0.5], DEFAULT_PRIOR_CONCENTRATION)[0, 0] < 1e-6
    assert sequential([[[5000, 5000]]], [0.5, 0.5], DEFAULT_PRIOR_CONCENTRATION)[0, 0] == 1.0
    assert sequential([[[0, 0]]], [0.5, 0.5], DEFAULT_PRIOR_CONCENTRATION)[0, 0] == 1.0  # no units: no evidence


def test_sequential_along_the_nights_is_the_oracles_running_minimum_restarted_at_a_reopen():
    rng = np.random.default_rng(5)
    cum = rng.multinomial(300, [0.53, 0.47], size=(3, 12)).cumsum(axis=1).astype(float)
    conc = np.array([50.0, 866.0, 3000.0])[:, None, None]
    epoch = np.zeros((3, 12), dtype=np.int64)
    epoch[2, 6:] = 1  # the third experiment reopens at night 6: its test starts again there
    got = sequential(cum, [0.5, 0.5], conc, epoch)
    for e in range(2):
        np.testing.assert_allclose(got[e], ref.srm_sequential(cum[e], [0.5, 0.5], conc[e, 0, 0], looks_axis=0).pvalue,
                                   rtol=1e-10)  # gammaln of large sums: the two forms round apart
    first = ref.srm_sequential(cum[2, :6], [0.5, 0.5], 3000.0, looks_axis=0).pvalue
    # the running minimum starts again at the reopen (the look gives a new epoch its own strata)
    second = ref.srm_sequential(cum[2, 6:], [0.5, 0.5], 3000.0, looks_axis=0).pvalue
    np.testing.assert_allclose(got[2], np.concatenate([first, second]), rtol=1e-10)


def test_the_strata_of_an_epoch_multiply_their_bayes_factors():
    # two strata (a declared allocation change from 50/50 to 20/80 at night 2); the look's
    # e-value at each night is the product of the strata's Bayes factors (independent units)
    x = np.array([[[[40, 38], [0, 0]], [[80, 79], [0, 0]], [[80, 79], [21, 79]], [[80, 79], [40, 163]]]], float)
    shares = np.array([[[[0.5, 0.5], [0.2, 0.8]]]])
    counted = np.ones((1, 4, 2), dtype=bool)
    got = srm_sequential(x, shares, np.full((1, 1, 1), 500.0), np.zeros((1, 4), dtype=np.int64), counted)
    bf0 = ref.srm_sequential(x[0, :, 0], [0.5, 0.5], 500.0).bayes_factor
    bf1 = ref.srm_sequential(x[0, :, 1], [0.2, 0.8], 500.0).bayes_factor
    np.testing.assert_allclose(got[0], np.minimum(1, 1 / np.maximum.accumulate(bf0 * bf1)), rtol=1e-10)
    # a stratum not counted at a night adds nothing to it
    counted[0, :, 1] = False
    got = srm_sequential(x, shares, np.full((1, 1, 1), 500.0), np.zeros((1, 4), dtype=np.int64), counted)
    np.testing.assert_allclose(got[0], np.minimum(1, 1 / np.maximum.accumulate(bf0)), rtol=1e-10)


def test_a_padded_arm_leaves_an_experiment_as_it_is_alone():
    # experiment 0 has two arms in a grid of three: its third share is NaN (no such arm)
    x = np.array([[[[60.0, 40.0, 0.0]]], [[[30.0, 35.0, 35.0]]]])
    shares = np.array([[[[0.5, 0.5, np.nan]]], [[[1 / 3, 1 / 3, 1 / 3]]]])
    got = srm_sequential(x, shares, np.full((2, 1, 1), 100.0), np.zeros((2, 1), dtype=np.int64), np.ones((2, 1, 1), bool))
    assert got[0, 0] == pytest.approx(float(ref.srm_sequential([60, 40], [0.5, 0.5], 100.0).pvalue), rel=1e-12)
    assert got[1, 0] == pytest.approx(float(ref.srm_sequential([30, 35, 35], [1, 1, 1], 100.0).pvalue), rel=1e-12)


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
    cum = rng.multinomial(150, shares, size=(n_exp, n_looks)).cumsum(axis=1)
    fired = (sequential(cum, shares, DEFAULT_PRIOR_CONCENTRATION)[:, -1] < 0.05).mean()
    assert fired <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_exp)


def test_the_prior_concentration_tuned_at_a_planned_sample_by_its_formula():
    # c = n* / (-2 log alpha + log(1 - 2 log alpha)) - 1, at least 1 (the docstring's formula,
    # Howard et al. 2021 Sec. 3.5 tuning carried to the Dirichlet prior), by hand at alpha 0.01
    two = -2 * np.log(0.01)
    assert float(tuned_concentration(10000.0, 0.01)) == pytest.approx(10000.0 / (two + np.log(1 + two)) - 1, rel=1e-12)
    assert float(tuned_concentration(5.0, 0.01)) == 1.0  # a tiny plan: the floor


def test_a_plan_of_at_most_one_unit_takes_the_floor_not_the_fallback():
    # c = n* / (...) - 1 is below the floor 1 for any n* in (0, 1]: the floor, not the fallback
    # of 100 kept for unknown plans
    assert tuned_concentration([0.5, 1.0], 0.01).tolist() == [1.0, 1.0]
    assert tuned_concentration([0.0, np.nan, np.inf], 0.01).tolist() == [DEFAULT_PRIOR_CONCENTRATION] * 3


def constancy(cum, epoch=None):
    cum = np.asarray(cum, float)
    epoch = np.zeros(cum.shape[:2], dtype=np.int64) if epoch is None else np.asarray(epoch)
    return srm_constancy(cum, np.ones((cum.shape[0], cum.shape[2]), dtype=bool), epoch)


def test_the_constancy_e_value_of_one_look_by_hand():
    # Looks [5, 5] then [6, 7]: the first look seeds the prediction (5.5 / 11 = 1/2 each arm);
    # the 3 arrivals [1, 2] are predicted at (1/2)^3 and fit best at their own split (1/3, 2/3):
    # E = (1/8) / ((1/3) (2/3)^2) = 27/32 < 1 (Wasserman, Ramdas and Balakrishnan 2020, split LRT)
    assert ref.srm_constancy([[5, 5], [6, 7]]).bayes_factor[1] == pytest.approx(27 / 32, rel=1e-12)
    np.testing.assert_allclose(constancy([[[5, 5], [6, 7]]]).pvalue, [[1.0, 1.0]])
    # arrivals [1, 9] after [5, 5]: E = (1/2)^10 / ((1/10)(9/10)^9) = 0.02525..., still no evidence
    expected = 0.5**10 / (0.1 * 0.9**9)
    assert ref.srm_constancy([[5, 5], [6, 14]]).bayes_factor[1] == pytest.approx(expected, rel=1e-12)


def test_constancy_along_the_nights_is_the_oracle_per_epoch_with_its_chi_square_beside_it():
    rng = np.random.default_rng(4)
    arrivals = np.concatenate([rng.multinomial(2000, [0.3, 0.7], size=(2, 8)), rng.multinomial(2000, [0.26, 0.74], size=(2, 8))],
                              axis=1)
    cum = arrivals.cumsum(axis=1).astype(float)
    epoch = np.zeros((2, 16), dtype=np.int64)
    epoch[1, 10:] = 1  # the second experiment reopens at night 10
    got = constancy(cum, epoch)
    np.testing.assert_allclose(got.pvalue[0], ref.srm_constancy(cum[0]).pvalue, rtol=1e-9)
    np.testing.assert_allclose(got.pvalue[1, :10], ref.srm_constancy(cum[1, :10]).pvalue, rtol=1e-9)
    np.testing.assert_allclose(got.pvalue[1, 10:], ref.srm_constancy(cum[1, 10:]).pvalue, rtol=1e-9)
    # the chi-square of homogeneity of the nightly arrivals (scipy's chi2_contingency)
    for night in (1, 7, 15):
        want = stats.chi2_contingency(arrivals[0, : night + 1], correction=False).pvalue
        assert got.chisquare_p[0, night] == pytest.approx(want, rel=1e-9)
    assert np.isnan(got.chisquare_p[0, 0])  # one night with units: no test of homogeneity


def test_a_constant_split_never_fires_the_constancy_test():
    # 400 experiments x 30 nights at a constant 30/70 split: false alarms at 0.01 stay below
    # 0.01 + 3 s.e. (MC s.e. sqrt(0.01 * 0.99 / 400) = 0.005)
    rng = np.random.default_rng(12)
    cum = rng.multinomial(500, [0.3, 0.7], size=(400, 30)).cumsum(axis=1)
    assert (constancy(cum).pvalue[:, -1] < 0.01).mean() <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / 400)
