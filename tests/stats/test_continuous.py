"""Tests for zcl_assets.stats.continuous."""

import numpy as np
import pytest
from scipy import stats

from zcl_assets.stats.continuous import welch

# R datasets::sleep, extra by group
SLEEP_1 = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
SLEEP_2 = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])


def _stats(a):
    return a.size, a.mean(), a.var(ddof=1)


def test_welch_matches_r_sleep():
    # R: t.test(extra ~ group, data = sleep)  (Welch by default; group 1 - group 2)
    # t = -1.8608, df = 17.776, p-value = 0.07939
    # 95 percent confidence interval: -3.3654832  0.2054832
    # Here treatment = group 2, so signs flip: diff = +1.58.
    res = welch(*_stats(SLEEP_2), *_stats(SLEEP_1))
    assert res.diff == pytest.approx(1.58, abs=1e-12)
    assert res.statistic == pytest.approx(1.8608, abs=5e-5)
    assert res.df == pytest.approx(17.776, abs=5e-4)
    assert res.pvalue == pytest.approx(0.07939, abs=5e-6)
    assert res.ci_low == pytest.approx(-0.2054832, abs=5e-8)
    assert res.ci_high == pytest.approx(3.3654832, abs=5e-8)


def test_welch_vectorised_matches_scipy_raw():
    rng = np.random.default_rng(1)
    samples = [(rng.normal(1, 2, n1), rng.normal(0, 1, n2)) for n1, n2 in [(5, 9), (30, 12), (200, 250)]]
    s_t = np.array([_stats(t) for t, _ in samples]).T
    s_c = np.array([_stats(c) for _, c in samples]).T
    res = welch(*s_t, *s_c)
    for i, (t, c) in enumerate(samples):
        ref = stats.ttest_ind(t, c, equal_var=False)  # scipy Welch on raw data
        assert res.statistic[i] == pytest.approx(ref.statistic, rel=1e-10)
        assert res.pvalue[i] == pytest.approx(ref.pvalue, rel=1e-10)
        assert res.df[i] == pytest.approx(ref.df, rel=1e-10)
        ci = ref.confidence_interval(0.95)
        assert res.ci_low[i] == pytest.approx(ci.low, rel=1e-10)
        assert res.ci_high[i] == pytest.approx(ci.high, rel=1e-10)


def test_welch_degenerate():
    # two constant samples: scipy can report p ~ 0; we report NaN (zero standard error)
    res = welch(10, 1.0, 0.0, 10, 1.0 + 1e-9, 0.0)
    assert np.isnan(res.pvalue) and np.isnan(res.ci_low) and np.isnan(res.statistic)
    # n < 2, NaN input, empty arm
    res = welch([1, 10, 0], [1.0, np.nan, 0.0], [0.5, 1.0, 0.0], [10, 10, 10], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    assert np.isnan(res.pvalue).all() and np.isnan(res.df).all()
    with pytest.raises(ValueError):
        welch(10, 1.0, -1.0, 10, 1.0, 1.0)
    with pytest.raises(ValueError):
        welch(10, 1.0, 1.0, 10, 1.0, 1.0, alpha=1.5)


def test_welch_with_two_units_in_an_arm_is_defined_and_with_one_is_not():
    # two units are the fewest a sample variance needs (scipy agrees); one is too few
    ref = stats.ttest_ind_from_stats(5.0, 1.5, 6, 3.0, 2.0, 2, equal_var=False)
    r = welch(6, 5.0, 1.5**2, 2, 3.0, 2.0**2)
    assert float(r.pvalue) == pytest.approx(ref.pvalue, rel=1e-9)
    r = welch(2, 5.0, 1.5**2, 6, 3.0, 2.0**2)
    assert float(r.pvalue) == pytest.approx(stats.ttest_ind_from_stats(5.0, 1.5, 2, 3.0, 2.0, 6, equal_var=False).pvalue,
                                            rel=1e-9)
    assert np.isnan(float(welch(6, 5.0, 2.25, 1, 3.0, 4.0).pvalue))


@pytest.mark.parametrize("name, args", [("n_t", (-1, 1.0, 1.0, 10, 1.0, 1.0)), ("n_c", (10, 1.0, 1.0, -1, 1.0, 1.0)),
                                        ("var_t", (10, 1.0, -1.0, 10, 1.0, 1.0)), ("var_c", (10, 1.0, 1.0, 10, 1.0, -1.0))])
def test_welch_error_names_the_negative_argument(name, args):
    with pytest.raises(ValueError, match=f"^{name} must be non-negative$"):
        welch(*args)
