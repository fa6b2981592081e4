"""Reference forms of statistics the look runs vectorised: the oracles of the tests.

Each is the plain form of a method the project computes another way (a loop over tables
through scipy, the confidence sequence assembled from one pair of arms), kept here as
statsmodels keeps R's output beside its tests. The SRM tests have theirs in
``srm_reference.py``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from scipy.stats.contingency import odds_ratio as _odds_ratio

from zcl_assets.stats._validate import check_alpha, guard_variance, out
from zcl_assets.stats.binary import FisherResult, _prepare
from zcl_assets.stats.sequential import anytime_pvalue, cs_halfwidth, optimal_rho


def fisher_exact_scipy(x_t, n_t, x_c, n_c, alpha: float = 0.05, interval: bool = True) -> FisherResult:
    """Fisher's exact test with the conditional odds-ratio interval.

    Uses ``scipy.stats.fisher_exact`` (two-sided) for the p-value and
    ``scipy.stats.contingency.odds_ratio(kind="conditional")`` for the
    conditional MLE of the odds ratio and its exact interval. Loops over
    elements, so it is meant for small tables; use the score methods for
    large counts. The exact interval is the slow part (about 5 ms for 50
    per arm, 0.3 s for 5000 per arm in scipy 1.17); ``interval=False``
    skips it.

    Args:
        x_t: Successes in treatment, shape broadcastable with the others.
        n_t: Trials (sessions) in treatment.
        x_c: Successes in control.
        n_c: Trials in control.
        alpha: Two-sided level of the interval, in (0, 1).
        interval: Compute the conditional odds ratio and its interval; if
            False those fields are NaN (p-value only, fast).

    Returns:
        FisherResult of arrays with the broadcast shape (NumPy scalars for
        scalar input). See the class for when a field is NaN or infinite.

    Raises:
        ValueError: alpha outside (0, 1), a negative count, or x > n.

    References:
        Fisher, R. A. (1935). The logic of inductive inference. JRSS 98:39-82.
        Cornfield, J. (1956) for the conditional interval (as in R's
        ``fisher.test``).

    Examples:
        >>> round(float(fisher_exact_scipy(5, 5, 0, 5).pvalue), 5)
        0.00794
    """
    alpha = check_alpha(alpha)
    x_t, n_t, x_c, n_c, ok = _prepare(x_t, n_t, x_c, n_c)
    shape = x_t.shape
    p = np.full(shape, np.nan)
    orr = np.full(shape, np.nan)
    lo = np.full(shape, np.nan)
    hi = np.full(shape, np.nan)
    for idx in zip(*np.nonzero(ok)) if shape else ([()] if ok else []):
        table = np.array(
            [[x_t[idx], n_t[idx] - x_t[idx]], [x_c[idx], n_c[idx] - x_c[idx]]]
        ).round().astype(np.int64)
        p[idx] = stats.fisher_exact(table, alternative="two-sided").pvalue
        col = table.sum(axis=0)
        if interval and np.all(col > 0):  # otherwise the odds ratio is not identified
            res = _odds_ratio(table, kind="conditional")
            ci = res.confidence_interval(confidence_level=1.0 - alpha, alternative="two-sided")
            orr[idx], lo[idx], hi[idx] = res.statistic, ci.low, ci.high
    return FisherResult(out(p), out(orr), out(lo), out(hi))


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
