"""Variance for user-randomized experiments analysed at session level.

When users are randomized but the metric is per session, sessions of one
user are correlated and the naive session-level variance is too small.
``delta_method_mean`` / ``delta_method_difference`` use per-user sums
(Deng, Lu and Litz 2018); ``cr2_satterthwaite`` gives the bias-reduced
cluster-robust variance with small-sample df for few clusters (Bell and
McCaffrey 2002); ``design_effect`` is Kish's inflation for planning.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ._validate import as_float, check_alpha, check_nonnegative, guard_variance, out

__all__ = [
    "RatioResult",
    "DifferenceResult",
    "CR2Result",
    "delta_method_mean",
    "delta_method_difference",
    "cr2_satterthwaite",
    "design_effect",
]


class RatioResult(NamedTuple):
    """A ratio-of-sums mean and its delta-method variance.

    Attributes:
        mean: sum over users of Y_u / sum over users of M_u (per-session mean).
        variance: Delta-method variance of ``mean`` (metric units squared).
            NaN when n_users < 2, the session total is 0, or an input is NaN.
        n_users: Number of users (clusters), as given.
    """

    mean: np.ndarray
    variance: np.ndarray
    n_users: np.ndarray


class DifferenceResult(NamedTuple):
    """Treatment minus control with a normal interval.

    Attributes:
        diff: mean_t - mean_c.
        se: Standard error of the difference.
        ci_low: diff - z_{1-alpha/2} se.
        ci_high: diff + z_{1-alpha/2} se.
        statistic: diff / se.
        pvalue: Two-sided normal p-value.

    ``se``, interval, statistic and p-value are NaN when either variance is
    NaN or the standard error is zero (no variation: no evidence).
    """

    diff: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    statistic: np.ndarray
    pvalue: np.ndarray


class CR2Result(NamedTuple):
    """Difference in means with CR2 cluster-robust variance.

    Attributes:
        diff: Treatment mean minus control mean (OLS coefficient of the arm
            indicator).
        se: CR2 standard error.
        df: Bell-McCaffrey Satterthwaite degrees of freedom (working model:
            independent, homoskedastic errors).
        ci_low: diff - t_{1-alpha/2, df} se.
        ci_high: diff + t_{1-alpha/2, df} se.
        statistic: diff / se.
        pvalue: Two-sided t p-value with ``df``.
        n_clusters: Number of clusters used.

    All fields but ``n_clusters`` are NaN when an arm has fewer than one
    cluster, there are fewer than 3 clusters in total, the data contain
    NaN/inf, or the standard error is zero.
    """

    diff: float
    se: float
    df: float
    ci_low: float
    ci_high: float
    statistic: float
    pvalue: float
    n_clusters: int


def delta_method_mean(n_users, sum_y, sum_y2, sum_m, sum_m2, sum_ym) -> RatioResult:
    """Per-session mean of a user-randomized arm with the delta-method variance.

    With per-user sums ``Y_u`` (metric summed over the user's sessions) and
    ``M_u`` (the user's session count), the mean is ``R = sum Y_u / sum M_u``
    and (Deng, Lu and Litz 2018, eq. 3 applied to the ratio of means)

        Var(R) ~= (1/n) [ s_YY / mu_M^2 - 2 mu_Y s_YM / mu_M^3
                          + mu_Y^2 s_MM / mu_M^4 ],

    with ``mu`` the per-user means and ``s`` the sample (co)variances over
    users (divisor n - 1). This equals the CR1 cluster-robust variance of an
    intercept-only session-level regression (statsmodels ``cov_type=
    "cluster"``), which the tests check.

    Args:
        n_users: Number of users in the arm (count), broadcastable.
        sum_y: Sum over users of Y_u.
        sum_y2: Sum over users of Y_u^2.
        sum_m: Sum over users of M_u (total sessions).
        sum_m2: Sum over users of M_u^2.
        sum_ym: Sum over users of Y_u * M_u.

    Returns:
        RatioResult with the broadcast shape; see the class for NaN cases.
        ``mean`` is NaN only when the session total is 0 or an input NaN.

    Raises:
        ValueError: negative n_users, sum_m, sum_y2 or sum_m2.

    References:
        Deng, A., Lu, J. and Litz, J. (2018). Applying the delta method in
        metric analytics: a practical guide with novel ideas. KDD.
    """
    arrs = np.broadcast_arrays(*(as_float(a) for a in (n_users, sum_y, sum_y2, sum_m, sum_m2, sum_ym)))
    n, sy, syy, sm, smm, sym = arrs
    for name, a in (("n_users", n), ("sum_m", sm), ("sum_y2", syy), ("sum_m2", smm)):
        check_nonnegative(name, a)
    finite = np.all([np.isfinite(a) for a in arrs], axis=0)
    with np.errstate(invalid="ignore"):
        has_mean = finite & (sm > 0) & (n > 0)
        ok = has_mean & (n >= 2)
    nn = np.where(ok, n, 2.0)
    msafe = np.where(has_mean, sm, 1.0)
    mean = np.where(has_mean, sy / msafe, np.nan)
    mu_y, mu_m = sy / nn, np.where(ok, sm, 1.0) / nn
    s_yy = (syy - nn * mu_y**2) / (nn - 1)
    s_mm = (smm - nn * mu_m**2) / (nn - 1)
    s_ym = (sym - nn * mu_y * mu_m) / (nn - 1)
    var = (s_yy / mu_m**2 - 2 * mu_y * s_ym / mu_m**3 + mu_y**2 * s_mm / mu_m**4) / nn
    # per-user variance var * n is noise when within 1e-10 of mean^2 (guard_variance)
    var = guard_variance(np.where(ok, var, np.nan), np.where(has_mean, mean, np.nan) / np.sqrt(nn))
    var = np.where(ok, np.maximum(var, 0.0), np.nan)  # rounding can make it -1e-18
    return RatioResult(out(mean), out(var), out(n))


def delta_method_difference(treatment: RatioResult, control: RatioResult, alpha: float = 0.05) -> DifferenceResult:
    """Treatment minus control of two ratio metrics, normal interval.

    Arms are independent (users randomized), so the variance of the
    difference is the sum of the two delta-method variances.

    Args:
        treatment: ``delta_method_mean(...)`` of the treatment arm.
        control: ``delta_method_mean(...)`` of the control arm.
        alpha: Two-sided level, in (0, 1).

    Returns:
        DifferenceResult with the broadcast shape; see the class for NaN cases.

    Raises:
        ValueError: alpha outside (0, 1).

    References:
        Deng, Lu and Litz (2018), KDD.
    """
    alpha = check_alpha(alpha)
    diff = as_float(treatment.mean) - as_float(control.mean)
    var = as_float(treatment.variance) + as_float(control.variance)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(diff) & np.isfinite(var) & (var > 0)
    se = np.sqrt(np.where(ok, var, 1.0))
    z = stats.norm.isf(alpha / 2.0)
    stat = np.where(ok, diff, 0.0) / se
    nan = np.nan
    return DifferenceResult(
        diff=out(diff),
        se=out(np.where(ok, se, nan)),
        ci_low=out(np.where(ok, diff - z * se, nan)),
        ci_high=out(np.where(ok, diff + z * se, nan)),
        statistic=out(np.where(ok, stat, nan)),
        pvalue=out(np.where(ok, 2 * stats.norm.sf(np.abs(stat)), nan)),
    )


def _inv_sqrt_psd(a: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """Symmetric (Moore-Penrose) inverse square root of a PSD matrix."""
    w, v = np.linalg.eigh(a)
    inv = np.where(w > tol, 1.0 / np.sqrt(np.where(w > tol, w, 1.0)), 0.0)
    return (v * inv) @ v.T


def cr2_satterthwaite(y, treatment, cluster, alpha: float = 0.05) -> CR2Result:
    """Difference in means with CR2 variance and Satterthwaite df (few clusters).

    Fits OLS ``y ~ 1 + treatment`` on unit-level (session-level) data and
    uses the bias-reduced linearization estimator of Bell and McCaffrey
    (2002): residuals of cluster g are multiplied by ``A_g = (I - H_gg)^{-1/2}``
    (symmetric Moore-Penrose inverse square root), ``H`` the hat matrix. With
    ``u_g = A_g X_g (X'X)^{-1} c`` for the contrast ``c`` of the arm
    coefficient, ``V = sum_g (u_g' e_g)^2`` and the df are

        df = (sum_g u_g'(I - H) u_g)^2 / sum_g sum_h (u_g'(I - H) u_h)^2

    (Satterthwaite under working independence, as clubSandwich's
    ``vcovCR(type = "CR2")`` with ``test = "Satterthwaite"`` for OLS). With
    equal cluster sizes nested in arms this reduces to the two-sample
    variance of cluster means, ``s_t^2/G_t + s_c^2/G_c``.

    Dense ``O(N^2)`` memory for the df: meant for few clusters (say < 100)
    and a few thousand rows. For many clusters use the delta method.

    Args:
        y: Outcome per unit (session), 1-D, metric units.
        treatment: Arm indicator per unit, 1 = treatment, 0 = control.
        cluster: Cluster id per unit (e.g. user id), any hashable dtype.
        alpha: Two-sided level, in (0, 1).

    Returns:
        CR2Result (floats); see the class for NaN cases.

    Raises:
        ValueError: alpha outside (0, 1), arrays of different lengths or not
            1-D, or a treatment value other than 0/1.

    References:
        Bell, R. M. and McCaffrey, D. F. (2002). Bias reduction in standard
        errors for linear regression with multi-stage samples. Survey
        Methodology 28:169-181.
        Pustejovsky, J. E. and Tipton, E. (2018). Small-sample methods for
        cluster-robust variance estimation and hypothesis testing in fixed
        effects models. JBES 36:672-683.
    """
    alpha = check_alpha(alpha)
    y = as_float(y)
    d = as_float(treatment)
    cl = np.asarray(cluster)
    if y.ndim != 1 or d.shape != y.shape or cl.shape != y.shape:
        raise ValueError("y, treatment and cluster must be 1-D arrays of the same length")
    if np.any(~np.isnan(d) & (d != 0) & (d != 1)):
        raise ValueError("treatment must be 0 or 1")
    _, codes = np.unique(cl, return_inverse=True)
    n_clusters = int(codes.max() + 1) if codes.size else 0
    nan = float("nan")
    fail = CR2Result(nan, nan, nan, nan, nan, nan, nan, n_clusters)
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(d))) or n_clusters < 3:
        return fail
    clusters_t = np.unique(codes[d == 1])
    clusters_c = np.unique(codes[d == 0])
    if clusters_t.size < 1 or clusters_c.size < 1:
        return fail
    x = np.column_stack([np.ones_like(y), d])
    xtx_inv = np.linalg.inv(x.T @ x)
    # OLS on [1, d] fits the two arm means; computed directly so that constant
    # data give exactly zero residuals (no rounding-noise standard error).
    mean_t, mean_c = y[d == 1].mean(), y[d == 0].mean()
    e = y - np.where(d == 1, mean_t, mean_c)
    c = np.array([0.0, 1.0])
    h = x @ xtx_inv @ x.T
    imh = np.eye(y.size) - h
    u = np.zeros((n_clusters, y.size))  # row g: u_g spread over its units
    v_cr2 = 0.0
    for g in range(n_clusters):
        idx = np.nonzero(codes == g)[0]
        a_g = _inv_sqrt_psd(imh[np.ix_(idx, idx)])
        u_g = a_g @ (x[idx] @ (xtx_inv @ c))
        u[g, idx] = u_g
        v_cr2 += float(u_g @ e[idx]) ** 2
    p = u @ imh @ u.T
    df = float(np.trace(p) ** 2 / np.sum(p**2))
    se = float(np.sqrt(v_cr2))
    diff = float(mean_t - mean_c)
    if not se > 1e-14 * max(1.0, float(np.max(np.abs(y)))):
        return CR2Result(diff, nan, nan, nan, nan, nan, nan, n_clusters)
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    t_stat = diff / se
    return CR2Result(
        diff, se, df, diff - half, diff + half, t_stat, float(2 * stats.t.sf(abs(t_stat), df)), n_clusters
    )


def design_effect(mean_cluster_size, icc, cv=0.0):
    """Design effect of cluster sampling: ``1 + ((1 + cv^2) m - 1) ICC``.

    With ``cv = 0`` (equal clusters) this is Kish's ``1 + (m - 1) ICC``; with
    variable cluster sizes, ``cv`` is the coefficient of variation of the
    cluster size (Eldridge, Ashby and Kerry 2006).

    Args:
        mean_cluster_size: Mean units per cluster m (>= 1), broadcastable.
        icc: Intra-cluster correlation in [0, 1].
        cv: Coefficient of variation of cluster sizes (>= 0).

    Returns:
        Variance inflation factor (>= 1 for icc >= 0); NaN for NaN input.

    Raises:
        ValueError: m < 1, icc outside [0, 1], or cv < 0.

    References:
        Kish, L. (1965). Survey Sampling. Wiley.
        Eldridge, S. M., Ashby, D. and Kerry, S. (2006). Sample size for
        cluster randomized trials: effect of coefficient of variation of
        cluster size and analysis method. Int. J. Epidemiology 35:1292-1300.
    """
    m, rho, v = np.broadcast_arrays(as_float(mean_cluster_size), as_float(icc), as_float(cv))
    with np.errstate(invalid="ignore"):
        if np.any(m < 1) or np.any((rho < 0) | (rho > 1)) or np.any(v < 0):
            raise ValueError("need mean_cluster_size >= 1, 0 <= icc <= 1, cv >= 0")
    return out(1.0 + ((1.0 + v**2) * m - 1.0) * rho)
