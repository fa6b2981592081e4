"""Tests for zcl_assets.stats.clustering."""

import numpy as np
import pytest
import statsmodels.api as sm

from zcl_assets.stats.clustering import (
    _inv_sqrt_psd,
    cr2_satterthwaite,
    delta_method_difference,
    delta_method_mean,
    design_effect,
)


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
# Treatment clusters (1, 2), (3, 5), (4, 4): means 1.5, 4, 4 -> s^2 = 25/12, G = 3
# Control clusters (0, 1), (2, 2), (1, 3): means 0.5, 2, 2 -> s^2 = 0.75, G = 3
# With equal cluster sizes CR2 = s_t^2/G_t + s_c^2/G_c = 25/36 + 1/4 = 34/36,
# and the Bell-McCaffrey df under working independence is
# (1/G_t + 1/G_c)^2 / (1/(G_t^2 (G_t-1)) + 1/(G_c^2 (G_c-1))) = (2/3)^2 / (1/9) = 4.
Y = np.array([1, 2, 3, 5, 4, 4, 0, 1, 2, 2, 1, 3], dtype=float)
D = np.array([1] * 6 + [0] * 6)
CL = np.repeat(np.arange(6), 2)


def test_cr2_hand_example():
    res = cr2_satterthwaite(Y, D, CL)
    assert res.diff == pytest.approx(19 / 6 - 1.5, rel=1e-12)
    assert res.se == pytest.approx(np.sqrt(34 / 36), rel=1e-10)
    assert res.df == pytest.approx(4.0, rel=1e-10)
    assert res.n_clusters == 6


def test_cr2_unbalanced_g_df_and_cr1_relation():
    """Equal cluster sizes, G_t = 4, G_c = 7.

    df = (1/4 + 1/7)^2 / (1/(16*3) + 1/(49*6)); CR2 = CR0 * G_a/(G_a - 1) per arm,
    where CR0 is statsmodels' CR1 divided by its factor G/(G-1) * (N-1)/(N-2).
    """
    rng = np.random.default_rng(11)
    gt, gc, m = 4, 7, 3
    cl = np.repeat(np.arange(gt + gc), m)
    d = (cl < gt).astype(float)
    y = rng.normal(0, 1, gt + gc)[cl] + rng.normal(0, 1, cl.size) + 0.3 * d
    res = cr2_satterthwaite(y, d, cl)
    assert res.df == pytest.approx((1 / gt + 1 / gc) ** 2 / (1 / (gt**2 * (gt - 1)) + 1 / (gc**2 * (gc - 1))), rel=1e-10)
    means = np.array([y[cl == g].mean() for g in range(gt + gc)])
    welch_var = means[:gt].var(ddof=1) / gt + means[gt:].var(ddof=1) / gc
    assert res.se**2 == pytest.approx(welch_var, rel=1e-10)
    x = sm.add_constant(d)
    fit = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": cl})
    g, n = gt + gc, y.size
    cr0 = fit.bse[1] ** 2 / (g / (g - 1) * (n - 1) / (n - 2))
    # per arm the CR0 pieces: (G_a - 1) s_a^2 / G_a^2
    cr0_hand = (gt - 1) * means[:gt].var(ddof=1) / gt**2 + (gc - 1) * means[gt:].var(ddof=1) / gc**2
    assert cr0 == pytest.approx(cr0_hand, rel=1e-9)
    assert res.diff == pytest.approx(fit.params[1], rel=1e-10)


def test_cr2_degenerate():
    assert np.isnan(cr2_satterthwaite(Y[:4], D[:4], CL[:4]).se)  # 2 clusters
    assert np.isnan(cr2_satterthwaite(Y, np.ones_like(D), CL).se)  # one arm only
    y_nan = Y.copy()
    y_nan[0] = np.nan
    assert np.isnan(cr2_satterthwaite(y_nan, D, CL).pvalue)
    const = cr2_satterthwaite(np.ones(12), D, CL)
    assert np.isnan(const.pvalue) and const.diff == 0.0
    with pytest.raises(ValueError):
        cr2_satterthwaite(Y, D * 2, CL)
    with pytest.raises(ValueError):
        cr2_satterthwaite(Y, D[:5], CL)


def test_design_effect():
    assert design_effect(10, 0.05) == pytest.approx(1.45)  # Kish: 1 + 9 * 0.05
    assert design_effect(10, 0.05, cv=0.5) == pytest.approx(1.575)  # Eldridge: 1 + (1.25*10 - 1) * 0.05
    assert design_effect(1, 0.3) == 1.0
    np.testing.assert_allclose(design_effect([2, 3], [0.1, 0.2]), [1.1, 1.4])
    assert np.isnan(design_effect(np.nan, 0.1))
    for bad in ((0.5, 0.1, 0.0), (5, 1.5, 0.0), (5, -0.1, 0.0), (5, 0.1, -0.5)):
        with pytest.raises(ValueError, match=r"^need mean_cluster_size >= 1, 0 <= icc <= 1, cv >= 0$"):
            design_effect(*bad[:2], cv=bad[2])


def test_cr2_with_exactly_three_clusters():
    """Two treatment clusters and one control cluster, two sessions each (the fewest allowed).

    By hand: treatment cluster means 2 and 6 (mean 4), control mean 3, diff 1. The single
    control cluster's residuals lie in the null space of I - H_gg, so it adds nothing; each
    treatment cluster adds (ybar_g - ybar_t)^2 / 2, so V = (4 + 4) / 2 = 4, se = 2 (the
    two-sample formula s_t^2 / G_t = 8 / 2). Satterthwaite df: P = u (I - H) u' has diagonal
    1/(4m) and off-diagonal -1/(4m) among the treatment clusters (m = 2), so
    df = (2/(4m))^2 / (4/(4m)^2) = 1 = G_t - 1. t_{.975, 1} = 12.7062 (scipy).
    """
    y = np.array([1.0, 3.0, 5.0, 7.0, 2.0, 4.0])
    d = np.array([1, 1, 1, 1, 0, 0])
    cl = np.array(["a", "a", "b", "b", "c", "c"])
    res = cr2_satterthwaite(y, d, cl)
    assert res.n_clusters == 3
    assert res.diff == pytest.approx(1.0, rel=1e-12)
    assert res.se == pytest.approx(2.0, rel=1e-10)
    assert res.df == pytest.approx(1.0, rel=1e-10)
    half = 2.0 * 12.706204736174698
    assert (res.ci_low, res.ci_high) == pytest.approx((1.0 - half, 1.0 + half), rel=1e-9)
    assert res.pvalue == pytest.approx(2 * 0.35241638234956674, rel=1e-9)  # 2 * scipy t.sf(0.5, 1)


def test_cr2_with_no_treatment_cluster_is_undefined_not_an_error():
    # Every session in control: there is no arm difference to estimate (X'X is singular).
    res = cr2_satterthwaite(Y, np.zeros_like(D), CL)
    assert res.n_clusters == 6
    assert all(np.isnan(v) for v in res[:7])


def test_inverse_square_root_of_a_singular_cluster_block_is_moore_penrose():
    # I - H_gg of a cluster holding a whole arm of m units is I - J/m: a projection with one zero
    # eigenvalue (direction of the ones vector). Its Moore-Penrose inverse square root is the
    # projection itself; inverting the zero eigenvalue to 1 would give I. The PSD square root is
    # unique, so it is pinned by R = R' and R R = pinv(P) (numpy's SVD-based pseudo-inverse).
    m = 3
    p = np.eye(m) - np.ones((m, m)) / m
    r = _inv_sqrt_psd(p)
    assert np.allclose(r, r.T, atol=1e-12) and np.linalg.eigvalsh(r).min() > -1e-10
    assert np.allclose(r @ r, np.linalg.pinv(p), atol=1e-10)
    assert np.allclose(r, p, atol=1e-10)
    # A full-rank block: the ordinary inverse square root, diag(4, 1) -> diag(1/2, 1).
    assert np.allclose(_inv_sqrt_psd(np.diag([4.0, 1.0])), np.diag([0.5, 1.0]), atol=1e-12)


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


@pytest.mark.parametrize("y, d, cl", [([1.0, 2.0], [0, 1, 1], [0, 1, 2]), ([[1.0, 2.0]], [0, 1], [0, 1])])
def test_cr2_refuses_arrays_of_different_lengths_or_shapes_by_name(y, d, cl):
    with pytest.raises(ValueError, match="^y, treatment and cluster must be 1-D arrays of the same length$"):
        cr2_satterthwaite(np.array(y), np.array(d), np.array(cl))
