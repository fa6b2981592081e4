"""Tests for zcl_assets.stats.binary.

Reference sources are written beside each expected value.
"""

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from statsmodels.stats.proportion import test_proportions_2indep as sm_test_2indep

from tests.stats.references import fisher_exact_scipy
from zcl_assets.stats.binary import MAX_FISHER_SUPPORT, _mn_restricted_mle, fisher_exact, miettinen_nurminen

# Newcombe (1998), Statistics in Medicine 17:873-890, Table II, 95 % intervals
# for the eight example tables (a)-(h), printed to 4 decimals.
# (x_t, n_t, x_c, n_c), method 10 (hybrid score, no CC), method 6 (Miettinen-Nurminen);
# the look reports method 6, so only its column is checked.
NEWCOMBE_TABLE_II = [
    ((56, 70, 48, 80), (0.0524, 0.3339), (0.0528, 0.3382)),
    ((9, 10, 3, 10), (0.1705, 0.8090), (0.1700, 0.8406)),
    ((6, 7, 2, 7), (0.0582, 0.8062), (0.0342, 0.8534)),
    ((5, 56, 0, 29), (-0.0381, 0.1926), (-0.0326, 0.1933)),
    ((0, 10, 0, 20), (-0.1611, 0.2775), (-0.1658, 0.2844)),
    ((0, 10, 0, 10), (-0.2775, 0.2775), (-0.2879, 0.2879)),
    ((10, 10, 0, 20), (0.6791, 1.0000), (0.7156, 1.0000)),
    ((10, 10, 0, 10), (0.6075, 1.0000), (0.6636, 1.0000)),
]


@pytest.mark.parametrize("table, _hybrid, mn", NEWCOMBE_TABLE_II)
def test_miettinen_nurminen_matches_table_ii(table, _hybrid, mn):
    res = miettinen_nurminen(*table)
    assert res.ci_low == pytest.approx(mn[0], abs=5e-5)
    assert res.ci_high == pytest.approx(mn[1], abs=5e-5)


@pytest.mark.parametrize("x1, n1, x2, n2, delta", [(56, 70, 48, 80, 0.1), (56, 70, 48, 80, -0.2), (9, 10, 3, 10, 0.5), (5, 56, 0, 29, 0.1)])
def test_restricted_mle_equals_numeric_maximum(x1, n1, x2, n2, delta):
    """Closed-form cubic root vs direct numerical maximisation of the likelihood."""

    def nll(p2):
        p1 = p2 + delta
        return -(x1 * np.log(p1) + (n1 - x1) * np.log1p(-p1) + x2 * np.log(p2) + (n2 - x2) * np.log1p(-p2))

    lo, hi = max(0.0, -delta) + 1e-13, min(1.0, 1.0 - delta) - 1e-13
    num = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}).x
    p1t, p2t = _mn_restricted_mle(x1 / n1, n1, x2 / n2, n2, delta)
    assert p2t == pytest.approx(num, abs=1e-7)
    assert p1t == pytest.approx(num + delta, abs=1e-7)


def test_mn_margin_zero_matches_statsmodels_score_test():
    # statsmodels test_proportions_2indep(56, 70, 48, 80, method="score",
    # correction=True, value=0): MN score test at margin 0 (statsmodels is
    # right there; at non-zero margins its restricted MLE is wrong: e.g.
    # value=0.1 gives prop1_null 0.7447 where the likelihood maximum is 0.7515).
    ref = sm_test_2indep(56, 70, 48, 80, method="score", compare="diff", value=0, correction=True)
    res = miettinen_nurminen(56, 70, 48, 80)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def test_mn_test_and_interval_consistent_by_construction():
    rng = np.random.default_rng(7)
    n_t = rng.integers(3, 60, 300)
    n_c = rng.integers(3, 60, 300)
    x_t = rng.binomial(n_t, 0.5)
    x_c = rng.binomial(n_c, 0.35)
    for margin in (0.0, 0.1, -0.15, 0.6):
        res = miettinen_nurminen(x_t, n_t, x_c, n_c, margin=margin)
        outside = (margin < res.ci_low) | (margin > res.ci_high)
        assert np.array_equal(outside, res.pvalue < 0.05)
    # at the interval ends the p-value is alpha
    ends = miettinen_nurminen(x_t[:20], n_t[:20], x_c[:20], n_c[:20])
    for i in range(20):
        for end in (float(ends.ci_low[i]), float(ends.ci_high[i])):
            if -1 < end < 1:
                p_end = miettinen_nurminen(x_t[i], n_t[i], x_c[i], n_c[i], margin=end).pvalue
                assert p_end == pytest.approx(0.05, abs=1e-6)


def test_mn_consistent_on_all_small_tables():
    """Every table with n_t, n_c in {1, 3, 5} and every x, at several margins."""
    rows = [(xt, nt, xc, nc) for nt in (1, 3, 5) for nc in (1, 3, 5) for xt in range(nt + 1) for xc in range(nc + 1)]
    x_t, n_t, x_c, n_c = np.array(rows, dtype=float).T
    for margin in (-0.5, 0.0, 0.3):
        res = miettinen_nurminen(x_t, n_t, x_c, n_c, margin=margin)
        assert np.isfinite(res.ci_low).all() and np.isfinite(res.pvalue).all()
        outside = (margin < res.ci_low) | (margin > res.ci_high)
        assert np.array_equal(outside, res.pvalue < 0.05)
        assert np.all((res.ci_low <= res.diff) & (res.diff <= res.ci_high))


def test_mn_non_zero_margin_statistic_sign():
    # observed 0.2 above a margin of 0.1: positive statistic, not significant
    res = miettinen_nurminen(56, 70, 48, 80, margin=0.1)
    assert res.statistic > 0 and res.pvalue > 0.05
    assert res.ci_low < 0.1 < res.ci_high


def test_fisher_design_reference():
    # DESIGN section 6: 5/5 vs 0/5 gives Fisher p = 0.00794 (= 2/252)
    res = fisher_exact(5, 5, 0, 5)
    assert res.pvalue == pytest.approx(2 / 252, rel=1e-12)
    assert round(float(res.pvalue), 5) == 0.00794
    assert res.odds_ratio == np.inf and res.ci_high == np.inf
    ref = fisher_exact_scipy(5, 5, 0, 5)  # scipy's loop gives the same table the same figures
    assert (ref.pvalue, ref.odds_ratio, ref.ci_high) == (pytest.approx(res.pvalue, rel=1e-12), np.inf, np.inf)


def test_fisher_tea_tasting_conditional_interval():
    # Tea tasting table [[3, 1], [1, 3]]. R fisher.test(matrix(c(3,1,1,3),2)):
    # p-value = 0.4857 (= 34/70). R prints OR 6.408309 and CI 0.2117329 621.9337505,
    # but R's uniroot tolerance (~1e-4) limits its precision; the exact roots of
    # the noncentral hypergeometric equations, solved here to 1e-14, are
    # 6.4083197, 0.2117356, 626.24353 (scipy agrees).
    res = fisher_exact(3, 4, 1, 4)
    assert res.pvalue == pytest.approx(34 / 70, rel=1e-12)
    w = np.array([1, 16, 36, 16, 1.0])  # C(4,a) C(4,4-a), a = 0..4
    a = np.arange(5)

    def probs(log_psi):
        t = w * np.exp(log_psi * a)
        return t / t.sum()

    mle = np.exp(brentq(lambda lp: probs(lp) @ a - 3, -10, 10, xtol=1e-14))
    upper = np.exp(brentq(lambda lp: probs(lp)[:4].sum() - 0.025, 0, 10, xtol=1e-14))
    lower = np.exp(brentq(lambda lp: probs(lp)[3:].sum() - 0.025, -10, 5, xtol=1e-14))
    assert res.odds_ratio == pytest.approx(mle, rel=1e-6)
    assert res.ci_low == pytest.approx(lower, rel=1e-6)
    assert res.ci_high == pytest.approx(upper, rel=1e-6)
    assert res.odds_ratio == pytest.approx(6.408309, rel=1e-5)  # R, 7 significant digits, uniroot tolerance


def test_degenerate_inputs_give_nan_not_errors():
    # empty arm (n = 0) and NaN input give NaN in every field, no exception
    x_t, n_t, x_c, n_c = [0, np.nan, 3], [0, 10, 10], [2, 4, 4], [10, 10, 10]
    for fn in (fisher_exact, miettinen_nurminen):
        res = fn(x_t, n_t, x_c, n_c)
        for field in res:
            assert np.isnan(field[:2]).all() and np.isfinite(field[2])
    # zero successes in both arms: valid interval, no significance
    mn = miettinen_nurminen(0, 10, 0, 20)
    assert mn.pvalue == 1.0 and mn.ci_low < 0 < mn.ci_high
    fe = fisher_exact(0, 10, 0, 20)
    assert fe.pvalue == 1.0 and np.isnan(fe.odds_ratio)
    # all successes in both arms
    mn = miettinen_nurminen(10, 10, 20, 20)
    assert mn.pvalue == 1.0 and mn.ci_low < 0 < mn.ci_high


@pytest.mark.parametrize(
    "args, kwargs",
    [((5, 4, 1, 4), {}), ((-1, 4, 1, 4), {}), ((1, 4, 1, 4), {"alpha": 1.0}), ((1, 4, 1, 4), {"alpha": 0.0})],
)
def test_invalid_arguments_raise(args, kwargs):
    for fn in (fisher_exact, miettinen_nurminen):
        with pytest.raises(ValueError):
            fn(*args, **kwargs)


def test_mn_margin_out_of_range_raises():
    with pytest.raises(ValueError):
        miettinen_nurminen(1, 4, 1, 4, margin=1.0)


def test_the_illinois_root_finder_converges_superlinearly_on_every_bracket():
    # Illinois (Dowell and Jarratt 1971): superlinear, order about 1.44, so a smooth monotone
    # function is solved in about a dozen steps, where bisection would need log2(1 / 1e-13) = 43
    # to narrow the bracket. An element stops when |f| <= 1e-10 (about 1e-10 from the root
    # here, where f' is near -1). Brackets: symmetric around 0, wide, narrow.
    from zcl_assets.stats.binary import _illinois

    roots = np.array([0.1, 0.35, -0.2])

    def f(x, i):
        return np.tanh(roots[i] - x) + 0.5 * (roots[i] - x) ** 3  # decreasing, one root per element

    steps = []

    def counted(x, i):
        steps.append(x.size)
        return f(x, i)

    a, b = np.array([-0.5, -0.9, -0.2000001]), np.array([0.5, 0.9, -0.1])
    x = _illinois(counted, a, b, f(a, np.arange(3)), f(b, np.arange(3)))
    brentq_roots = [brentq(lambda t, k=k: f(np.array([t]), np.array([k]))[0], a[k], b[k], xtol=1e-15) for k in range(3)]
    assert brentq_roots == pytest.approx(roots, abs=1e-14)
    assert x == pytest.approx(roots, abs=1e-9)
    assert len(steps) <= 15


def test_fisher_grid_without_a_table_it_can_compute_returns_nan_of_the_input_shape():
    # an empty arm, and a table whose support exceeds MAX_FISHER_SUPPORT: both documented NaN
    big = 2 * MAX_FISHER_SUPPORT
    res = fisher_exact([0.0, big / 2], [0.0, big], [1.0, big / 2], [3.0, big])
    assert len(res) == 4
    for field in res:
        assert np.shape(field) == (2,) and np.isnan(field).all()


def test_fisher_grid_agrees_with_scipy_table_by_table_when_supports_differ_in_width():
    # One call holds tables whose supports are 1 to 21 values wide, so the padded grid has
    # cells outside most tables' support; each table must come out as scipy computes it alone
    # (the oracle: scipy.stats.fisher_exact, scipy.stats.contingency.odds_ratio(kind="conditional")
    # table by table). No absolute tolerance: at an end of the support the odds ratio is exactly
    # 0 or inf, not the exp(-60) where the bisection stops.
    tables = [(5, 5, 0, 5), (3, 4, 1, 4), (0, 3, 2, 40), (1, 2, 0, 1), (7, 30, 2, 25), (20, 20, 1, 21),
              (0, 10, 0, 20), (12, 15, 12, 15), (2, 3, 9, 9), (1, 50, 4, 60)]
    x_t, n_t, x_c, n_c = (np.array(col, dtype=float) for col in zip(*tables))
    for alpha in (0.05, 0.2):
        grid = fisher_exact(x_t, n_t, x_c, n_c, alpha=alpha)
        for i, (a, b, c, d) in enumerate(tables):
            want = tuple(fisher_exact_scipy(a, b, c, d, alpha=alpha))
            got = (grid.pvalue[i], grid.odds_ratio[i], grid.ci_low[i], grid.ci_high[i])
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=f"table {tables[i]}, alpha {alpha}")


@pytest.mark.parametrize("shape", ["concave", "convex"])
def test_the_illinois_step_halves_the_kept_end_whichever_end_is_kept(shape):
    # Regula falsi on a concave decreasing function keeps moving the left end and stalls on the
    # right one (on a convex one, the reverse); Illinois halves the kept end's value after two
    # moves alike (Dowell and Jarratt 1971), so each takes about a dozen steps, where bisection
    # needs log2(7 / 1e-13) = 46. Roots by hand: f(x) = 1 - exp(x - r) and exp(r - x) - 1 are 0 at r.
    from zcl_assets.stats.binary import _illinois

    roots = np.array([0.3, -1.0, 2.0])
    if shape == "concave":
        def f(x, i):
            return 1.0 - np.exp(x - roots[i])
    else:
        def f(x, i):
            return np.exp(roots[i] - x) - 1.0
    steps = []

    def counted(x, i):
        steps.append(x.size)
        return f(x, i)

    a, b = roots - 3.0, roots + 4.0
    x = _illinois(counted, a, b, f(a, np.arange(3)), f(b, np.arange(3)))
    assert x == pytest.approx(roots, abs=1e-9)
    assert len(steps) <= 16


def test_counts_error_names_the_trials_argument():
    # _prepare validates each arm under its own argument names
    with pytest.raises(ValueError, match=r"^n_t must be non-negative$"):
        miettinen_nurminen(0, -1, 1, 5)
    with pytest.raises(ValueError, match=r"^x_t must not exceed n_t$"):
        miettinen_nurminen(6, 5, 1, 5)


def test_the_illinois_step_after_two_left_moves_is_the_secant_to_the_halved_right_value():
    # Dowell and Jarratt (1971): after the left end moves twice, the next trial point is the
    # secant through (a, f(a)) and (b, f(b) / 2), not a bisection. f(x) = 1 - exp(x) is concave
    # decreasing on [-3, 4], so its secant points stay left of the root 0 and a moves every step.
    # By hand: c1 = -2.87806, c2 = -2.75905, c3 = -2.53079 (the midpoint of [c2, 4] is 0.62048).
    from zcl_assets.stats.binary import _illinois

    def f(x):
        return 1.0 - np.exp(x)

    points = []

    def counted(x, i):
        points.append(float(x[0]))
        return f(x)

    a, b = -3.0, 4.0
    _illinois(counted, np.array([a]), np.array([b]), f(np.array([a])), f(np.array([b])))
    fb = f(b)
    c1 = (a * fb - b * f(a)) / (fb - f(a))
    c2 = (c1 * fb - b * f(c1)) / (fb - f(c1))
    c3 = (c2 * fb / 2 - b * f(c2)) / (fb / 2 - f(c2))
    assert c3 == pytest.approx(-2.53079, abs=1e-5)
    assert points[:3] == pytest.approx([c1, c2, c3], rel=1e-12)


def test_the_secant_stage_alone_solves_tables_of_a_few_dozen_units_or_more(monkeypatch):
    # _mn_limits' docstring: the secant stage reaches 1e-13 in a few steps once the arms hold
    # more than a few dozen units; the bracketed Illinois stage is only for small or boundary
    # tables. With Illinois made to fail, ordinary tables must still get their interval, and
    # each end must be where the score test's p-value is alpha (checked with Illinois back).
    import zcl_assets.stats.binary as binary

    rng = np.random.default_rng(11)
    n_t, n_c = rng.integers(50, 2000, 200), rng.integers(50, 2000, 200)
    x_t = rng.binomial(n_t, rng.uniform(0.15, 0.85, 200))
    x_c = rng.binomial(n_c, rng.uniform(0.15, 0.85, 200))

    def no_illinois(*args):
        raise AssertionError("the Illinois stage was needed")

    with monkeypatch.context() as m:
        m.setattr(binary, "_illinois", no_illinois)
        res = miettinen_nurminen(x_t, n_t, x_c, n_c)
    for i in range(0, 200, 20):
        for end in (float(res.ci_low[i]), float(res.ci_high[i])):
            p_end = miettinen_nurminen(x_t[i], n_t[i], x_c[i], n_c[i], margin=end).pvalue
            assert p_end == pytest.approx(0.05, abs=1e-8)


def test_fisher_interval_of_a_single_success_in_all_is_identified():
    # one success in all (treatment 1/6, control 0/5): the column of successes holds 1, enough
    # for the conditional odds ratio's interval. scipy.stats.contingency.odds_ratio(
    # [[1, 5], [0, 5]]).confidence_interval() = (0.021367521367521368, inf); Fisher's p = 1.
    res = fisher_exact(1, 6, 0, 5)
    assert float(res.ci_low) == pytest.approx(0.021367521367521368, rel=1e-9)
    assert float(res.ci_high) == np.inf and float(res.pvalue) == pytest.approx(1.0)
