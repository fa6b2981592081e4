"""Variance for user-randomized experiments analysed at session level.

When users are randomized but the metric is per session, sessions of one
user are correlated and the naive session-level variance is too small.
``delta_method_mean`` / ``delta_method_difference`` use per-user sums
(Deng, Lu and Litz 2018): the session-weighted ratio of sums that the look reports
beside the per-user mean of a user-randomized experiment.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ._validate import as_float, check_alpha, check_nonnegative, guard_variance, out

__all__ = ["RatioResult", "DifferenceResult", "delta_method_mean", "delta_method_difference"]


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
        statistic=out(np.where(ok, stat, nan)),  # pragma: no mutate
        pvalue=out(np.where(ok, 2 * stats.norm.sf(np.abs(stat)), nan)),  # pragma: no mutate
    )
