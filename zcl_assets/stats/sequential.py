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
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._validate import guard_variance

__all__ = [
    "ConfidenceSequence",
    "anytime_pvalue",
    "confidence_sequence",
    "cs_halfwidth",
    "optimal_rho",
]


class ConfidenceSequence(NamedTuple):
    """One look of a two-sided asymptotic confidence sequence.

    All fields are arrays of the broadcast shape of the inputs.

    Attributes:
        diff: Difference in means, treatment minus control, in the metric's units.
            NaN when either arm has no units or a non-finite mean.
        ci_low: Lower end of the ``1 - alpha`` confidence sequence at this look.
            NaN when ``diff`` is NaN, the pooled variance is zero, negative or
            non-finite, or ``alpha``/``n_plan`` are invalid.
        ci_high: Upper end; NaN under the same conditions as ``ci_low``.
        rho: Mixing (tuning) parameter used, fixed by ``alpha`` and the planned total
            sample. NaN when ``alpha`` is outside (0, 1) or the planned sample is not
            positive and finite.
        pvalue: Anytime-valid p-value in [0, 1]: the smallest level at which the CS
            (with the same ``rho``) excludes zero. NaN whenever ``ci_low`` is NaN.
    """

    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rho: np.ndarray
    pvalue: np.ndarray


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
    s2 = np.where(ok, sigma2, 1.0)
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


def confidence_sequence(
    n_t: ArrayLike,
    mean_t: ArrayLike,
    var_t: ArrayLike,
    n_c: ArrayLike,
    mean_c: ArrayLike,
    var_c: ArrayLike,
    alpha: ArrayLike,
    n_plan: ArrayLike,
    allocation_ratio: ArrayLike = 1.0,
    tuning_alpha: ArrayLike | None = None,
) -> ConfidenceSequence:
    """Two-sided asymptotic confidence sequence for ``mean_t - mean_c`` at one look.

    The CS is valid uniformly over all looks (any stopping rule) as the sample grows,
    with the tuning ``rho`` fixed at registration from ``alpha`` and the planned
    total sample ``n_plan * (1 + allocation_ratio)``. For binary metrics pass the
    proportion as the mean and ``p (1 - p)`` as the variance.

    Args:
        n_t: Units in the treatment arm (count, >= 0), any broadcastable shape.
        mean_t: Treatment mean, metric units.
        var_t: Treatment variance (per unit, metric units squared).
        n_c: Units in the control arm.
        mean_c: Control mean.
        var_c: Control variance.
        alpha: Significance level in (0, 1) (the experiment's alpha share).
        n_plan: Planned sample of the control arm, frozen at registration (as
            ``PlannedSample.n_plan``); the boundary is tightest when the pair reaches
            ``n_plan * (1 + allocation_ratio)`` units.
        allocation_ratio: Planned treatment-to-control ratio of units (1 for 50/50).
        tuning_alpha: Level at which ``rho`` is tuned (fixed at registration); default
            ``alpha``. The CS is valid at every ``alpha`` for a fixed ``rho``, so a look may
            read the same sequence at another level (the Holm step) without re-tuning.

    Returns:
        A :class:`ConfidenceSequence`. ``diff`` is NaN when an arm has no units or a
        non-finite mean; the interval and p-value are NaN additionally when the
        variance of the difference is zero (after the relative guard
        ``_validate.guard_variance``: float noise such as 1e-30 on a constant arm counts
        as zero), negative or non-finite, or when
        ``alpha``/``n_plan``/``allocation_ratio`` are invalid. No exception is raised
        for data values.

    References:
        Waudby-Smith, Arbour, Sinha, Kennedy, Ramdas (2024), "Time-uniform central
        limit theory and asymptotic confidence sequences", Annals of Statistics.
        Howard, Ramdas, McAuliffe, Sekhon (2021), "Time-uniform, nonparametric,
        nonasymptotic confidence sequences", Annals of Statistics.
        GrowthBook ``gbstats`` sequential testing (same boundary and tuning).

    Examples:
        >>> cs = confidence_sequence(1000, 0.55, 0.2475, 1000, 0.50, 0.25, 0.05, 1000)
        >>> round(float(cs.ci_low), 4), round(float(cs.ci_high), 4)
        (-0.0177, 0.1177)
    """
    n_t, mean_t, var_t, n_c, mean_c, var_c = (
        np.asarray(x, dtype=float) for x in (n_t, mean_t, var_t, n_c, mean_c, var_c)
    )
    alpha = np.asarray(alpha, dtype=float)
    tune = alpha if tuning_alpha is None else np.asarray(tuning_alpha, dtype=float)
    ratio = np.asarray(allocation_ratio, dtype=float)
    var_t = guard_variance(var_t, mean_t)
    var_c = guard_variance(var_c, mean_c)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        arms_ok = (
            np.isfinite(n_t) & (n_t > 0) & np.isfinite(n_c) & (n_c > 0)
            & np.isfinite(mean_t) & np.isfinite(mean_c)
        )
        diff = np.where(arms_ok, mean_t - mean_c, np.nan)
        se2 = var_t / np.where(arms_ok, n_t, 1.0) + var_c / np.where(arms_ok, n_c, 1.0)
        var_ok = (
            arms_ok & np.isfinite(var_t) & np.isfinite(var_c)
            & (var_t >= 0) & (var_c >= 0) & np.isfinite(se2) & (se2 > 0)
        )
        n_total = n_t + n_c
        sigma2 = np.where(var_ok, se2 * n_total, np.nan)
        ratio_ok = np.isfinite(ratio) & (ratio > 0)
        n_star = np.where(ratio_ok, np.asarray(n_plan, dtype=float) * (1.0 + ratio), np.nan)
        rho = optimal_rho(tune, n_star)
        hw = cs_halfwidth(sigma2, n_total, rho, alpha)
        ok = np.isfinite(hw)
        lo = np.where(ok, diff - hw, np.nan)
        hi = np.where(ok, diff + hw, np.nan)
        pvalue = np.where(ok, anytime_pvalue(diff, sigma2, n_total, rho), np.nan)

    shape = np.broadcast_shapes(diff.shape, lo.shape, rho.shape)
    return ConfidenceSequence(
        diff=np.broadcast_to(diff, shape).copy(),
        ci_low=np.broadcast_to(lo, shape).copy(),
        ci_high=np.broadcast_to(hi, shape).copy(),
        rho=np.broadcast_to(rho, shape).copy(),
        pvalue=np.broadcast_to(pvalue, shape).copy(),
    )
