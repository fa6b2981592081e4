"""Asymptotic confidence sequences for a difference in means (the deciding interval).

The nightly analysis looks at the same accumulating data again and again, so the
interval that decides must be valid uniformly over time. This module implements the
two-sided asymptotic confidence sequence (CS) of Waudby-Smith et al. (2024) in the
Gaussian-mixture ("normal mixture") form of Howard et al. (2021), as GrowthBook's
``gbstats`` uses it for its sequential testing.

With ``N = n_t + n_c`` the total sample of the comparison, ``sigma^2 = N * SE^2`` the
per-observation variance of the difference (``SE^2 = var_t/n_t + var_c/n_c``) and a
tuning parameter ``rho`` fixed at registration, the CS at level ``1 - alpha`` is

    diff +/- sigma * sqrt( 2 (N rho^2 + 1) / (N^2 rho^2) * log( sqrt(N rho^2 + 1) / alpha ) ).

``rho`` is chosen so that the boundary is tightest at the planned total sample ``N*``
(Waudby-Smith et al. 2024, eq. for the optimal rho; Howard et al. 2021, Sec. 3.5):

    rho^2 = ( -2 log(alpha) + log(1 - 2 log(alpha)) ) / N*.

The anytime-valid p-value is the reciprocal of the Gaussian-mixture martingale with the
same ``rho``, i.e. the smallest ``alpha`` at which the CS excludes zero:

    p = min(1, sqrt(N rho^2 + 1) * exp( -diff^2 N^2 rho^2 / (2 sigma^2 (N rho^2 + 1)) )).

The look (``analysis.engine``) reads the p-value first, for Holm across the arms, then the
CS at each comparison's Holm level; both use the ``rho`` tuned at registration.

Examples:
    With 1,000 units an arm, 0.55 against 0.50 (variances p (1 - p)), tuned at 2,000 units
    and read at alpha 0.05 (GrowthBook's ``gbstats`` gives the same interval):

    >>> n, diff, sigma2 = 2000, 0.05, 2000 * (0.2475 / 1000 + 0.25 / 1000)
    >>> rho = optimal_rho(0.05, 2000)
    >>> hw = cs_halfwidth(sigma2, n, rho, 0.05)
    >>> round(float(diff - hw), 4), round(float(diff + hw), 4)
    (-0.0177, 0.1177)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["anytime_pvalue", "cs_halfwidth", "optimal_rho"]


def optimal_rho(alpha: ArrayLike, n_star: ArrayLike) -> np.ndarray:
    """Tuning parameter that makes the normal-mixture boundary tightest at ``n_star``.

    Args:
        alpha: Significance level in (0, 1), any broadcastable shape.
        n_star: Total sample size (both arms) at which the boundary should be
            tightest, positive.

    Returns:
        ``rho = sqrt((-2 log alpha + log(1 - 2 log alpha)) / n_star)``; NaN where
        ``alpha`` is outside (0, 1) or ``n_star`` is not positive and finite.

    References:
        Waudby-Smith, Arbour, Sinha, Kennedy, Ramdas (2024), "Time-uniform central
        limit theory and asymptotic confidence sequences", Annals of Statistics
        (optimal rho for a target time); Howard, Ramdas, McAuliffe, Sekhon (2021),
        "Time-uniform, nonparametric, nonasymptotic confidence sequences", Annals of
        Statistics, Sec. 3.5.
    """
    alpha = np.asarray(alpha, dtype=float)
    n_star = np.asarray(n_star, dtype=float)
    ok = (alpha > 0) & (alpha < 1) & np.isfinite(n_star) & (n_star > 0)
    a = np.where(ok, alpha, 0.5)
    m = np.where(ok, n_star, 1.0)
    two_log = -2.0 * np.log(a)
    rho = np.sqrt((two_log + np.log1p(two_log)) / m)
    return np.where(ok, rho, np.nan)


def cs_halfwidth(
    sigma2: ArrayLike, n_total: ArrayLike, rho: ArrayLike, alpha: ArrayLike
) -> np.ndarray:
    """Half-width of the two-sided normal-mixture confidence sequence.

    Args:
        sigma2: Per-observation variance of the difference (``N * SE^2``), > 0.
        n_total: Total sample size ``N`` at this look (both arms), > 0.
        rho: Mixing parameter (see :func:`optimal_rho`), > 0.
        alpha: Significance level in (0, 1).

    Returns:
        ``sqrt(sigma2 * 2 (N rho^2 + 1) / (N^2 rho^2) * log(sqrt(N rho^2 + 1) / alpha))``;
        NaN where any input is out of its domain.

    References:
        Waudby-Smith et al. (2024), Theorem 2.2 (two-sided asymptotic CS).
    """
    sigma2 = np.asarray(sigma2, dtype=float)
    n = np.asarray(n_total, dtype=float)
    rho = np.asarray(rho, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    ok = (
        np.isfinite(sigma2) & (sigma2 > 0) & np.isfinite(n) & (n > 0)
        & np.isfinite(rho) & (rho > 0) & (alpha > 0) & (alpha < 1)
    )
    s2 = np.where(ok, sigma2, 1.0)  # pragma: no mutate
    nn = np.where(ok, n, 1.0)
    r2 = np.where(ok, rho, 1.0) ** 2
    a = np.where(ok, alpha, 0.5)
    v = nn * r2 + 1.0
    hw = np.sqrt(s2 * 2.0 * v / (nn**2 * r2) * (0.5 * np.log(v) - np.log(a)))
    return np.where(ok, hw, np.nan)


def anytime_pvalue(
    diff: ArrayLike, sigma2: ArrayLike, n_total: ArrayLike, rho: ArrayLike
) -> np.ndarray:
    """Anytime-valid p-value of the normal-mixture martingale (the CS's own test of zero).

    ``p = min(1, sqrt(N rho^2 + 1) exp(-diff^2 N^2 rho^2 / (2 sigma^2 (N rho^2 + 1))))``:
    the smallest ``alpha`` at which the CS with the same ``rho`` excludes zero, so that
    ``p < a`` exactly when the CS at level ``a`` excludes zero, for every ``a``.

    Args:
        diff: Estimated difference (metric units).
        sigma2: Per-observation variance of the difference, ``N * SE^2`` (> 0).
        n_total: Total sample ``N`` at this look (> 0).
        rho: Mixing parameter fixed at registration (> 0).

    Returns:
        p in [0, 1]; NaN where any input is out of its domain.

    References:
        Howard et al. (2021), Sec. 3.5 (normal mixture); Waudby-Smith et al. (2024).
    """
    d = np.asarray(diff, dtype=float)
    s2 = np.asarray(sigma2, dtype=float)
    n = np.asarray(n_total, dtype=float)
    r = np.asarray(rho, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ok = (
            np.isfinite(d) & np.isfinite(s2) & (s2 > 0) & np.isfinite(n) & (n > 0)
            & np.isfinite(r) & (r > 0)
        )
        r2 = np.where(ok, r, 1.0) ** 2
        nn = np.where(ok, n, 1.0)
        ss = np.where(ok, s2, 1.0)
        dd = np.where(ok, d, 0.0)
        v = nn * r2 + 1.0
        log_p = 0.5 * np.log(v) - dd**2 * nn**2 * r2 / (2.0 * ss * v)
        return np.where(ok, np.exp(np.minimum(log_p, 0.0)), np.nan)
