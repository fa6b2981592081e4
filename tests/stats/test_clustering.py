"""Tests for zcl_assets.stats.clustering."""

import numpy as np
import pytest
import statsmodels.api as sm

from zcl_assets.stats.clustering import delta_method_difference, delta_method_mean


def _user_data(rng, n_users, effect=0.0):
    m = rng.integers(1, 8, n_users)  # sessions per user
    user_effect = rng.normal(0, 1, n_users)
    y = [rng.normal(1 + effect + user_effect[u], 1, m[u]) for u in range(n_users)]
    return m, y


def _moments(m, y):
    ysum = np.array([v.sum() for v in y])
    return dict(
        n_users=m.size, sum_y=ysum.sum(), sum_y2=(ysum**2).sum(), sum_m=m.sum(), sum_m2=(m**2).sum(), sum_ym=(ysum * m).sum()
    )


def test_delta_method_equals_statsmodels_cluster_robust_intercept():
    """Independent route: session-level OLS y ~ 1 with statsmodels cov_type="cluster".

    statsmodels' CR1 factor G/(G-1) * (N-1)/(N-K) is G/(G-1) for K = 1, and the
    delta method with (n-1)-divisor covariances is algebraically the same
    quantity, so they agree to rounding.
    """
    rng = np.random.default_rng(3)
    m, y = _user_data(rng, 40)
    res = delta_method_mean(**_moments(m, y))
    ys = np.concatenate(y)
    groups = np.repeat(np.arange(m.size), m)
    fit = sm.OLS(ys, np.ones_like(ys)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert res.mean == pytest.approx(fit.params[0], rel=1e-12)
    assert res.variance == pytest.approx(fit.bse[0] ** 2, rel=1e-9)


def test_delta_method_hand_example():
    # Three users: (Y_u, M_u) = (3, 1), (4, 2), (11, 3). mean = 18 / 6 = 3.
    # Residuals Y_u - 3 M_u = 0, -2, 2; Var = sum r^2 / (sum M)^2 * n/(n-1) = 8/36 * 3/2 = 1/3.
    res = delta_method_mean(3, 18, 9 + 16 + 121, 6, 1 + 4 + 9, 3 + 8 + 33)
    assert res.mean == pytest.approx(3.0)
    assert res.variance == pytest.approx(1 / 3, rel=1e-12)


def test_delta_method_difference_and_degenerate():
    t = delta_method_mean(3, 18, 146, 6, 14, 44)
    c = delta_method_mean(3, 12, 9 + 16 + 49, 6, 14, 3 + 8 + 21)  # Y = 3, 4, 7: residuals 1, 0, -1
    d = delta_method_difference(t, c)
    # c: mean 2, var = 2/36 * 3/2 = 1/12; se = sqrt(1/3 + 1/12) = sqrt(5/12)
    assert d.diff == pytest.approx(1.0)
    assert d.se == pytest.approx(np.sqrt(5 / 12), rel=1e-12)
    assert d.ci_high - d.diff == pytest.approx(1.959963985 * np.sqrt(5 / 12), rel=1e-9)
    # degenerate: one user, no sessions, NaN, all values equal
    bad = delta_method_mean([1, 5, np.nan, 2], [1, 0, 1, 2], [1, 0, 1, 2], [1, 0, 1, 2], [1, 0, 1, 2], [1, 0, 1, 2])
    assert np.isnan(bad.variance[:3]).all() and bad.variance[3] == 0.0
    assert bad.mean[0] == 1.0 and np.isnan(bad.mean[1]) and np.isnan(bad.mean[2])
    const = delta_method_mean(2, 4, 8, 2, 2, 4)  # each user one session worth 2
    assert const.variance == 0.0
    dd = delta_method_difference(const, const)
    assert dd.diff == 0.0 and np.isnan(dd.pvalue) and np.isnan(dd.ci_low)
    with pytest.raises(ValueError):
        delta_method_mean(-1, 1, 1, 1, 1, 1)


# Hand example for CR2: clusters nested in arms, two units each.


@pytest.mark.parametrize("field", ["n_users", "sum_m", "sum_y2", "sum_m2"])
def test_delta_method_mean_names_the_negative_sum(field):
    sums = {"n_users": 10, "sum_y": 5.0, "sum_y2": 30.0, "sum_m": 20, "sum_m2": 50, "sum_ym": 12.0}
    with pytest.raises(ValueError, match=f"^{field} must be non-negative$"):
        delta_method_mean(**{**sums, field: -1})


def test_delta_method_difference_statistic_is_diff_over_se():
    # by hand: diff = 1.0 - 0.5 = 0.5, se = sqrt(0.03 + 0.01) = 0.2, z = 2.5,
    # p = 2 (1 - Phi(2.5)) = 2 * 0.0062097 = 0.0124193
    from zcl_assets.stats.clustering import RatioResult

    res = delta_method_difference(RatioResult(1.0, 0.03, 100.0), RatioResult(0.5, 0.01, 100.0))
    assert res.se == pytest.approx(0.2, rel=1e-12)
    assert res.statistic == pytest.approx(2.5, rel=1e-12)
    assert res.pvalue == pytest.approx(0.0124193, abs=1e-7)


def test_delta_method_keeps_a_small_real_variance_of_many_users():
    # 10,000 users with one session each, half at 99 and half at 101: mean 100, a real
    # per-user sd of about 1 (coefficient of variation 0.01, far above the 1e-5 noise
    # floor of guard_variance). By hand: s_YY = (100,010,000 - 10,000 * 100^2) / 9,999
    # = 10,000 / 9,999, s_MM = s_YM = 0, so Var(mean) = s_YY / 10,000 = 1 / 9,999.
    n = 10_000
    res = delta_method_mean(n, 1e6, 5000 * (99**2 + 101**2), n, n, 1e6)
    assert res.mean == pytest.approx(100.0, rel=1e-12)
    assert res.variance == pytest.approx(1 / 9999, rel=1e-9)


