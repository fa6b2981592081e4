"""CUPED: regression adjustment on a pre-experiment covariate (Deng, Xu, Kohavi, Walker 2013).

Deng, Xu, Kohavi and Walker (2013), "Improving the sensitivity of online controlled experiments
by utilizing pre-experiment data", WSDM: for a covariate ``X`` measured before the experiment,
``Y - theta (X - E X)`` has the mean of ``Y`` and the variance ``var(Y) (1 - rho^2)``, with
``theta = cov(X, Y) / var(X)`` and ``rho`` their correlation. The difference of two arms'
adjusted means is unbiased whatever ``theta`` is (``X`` cannot be moved by the treatment), so
``theta`` may be estimated from the data of both arms.

Here the covariate is a pair ``z = (x, h)``: ``x`` the unit's mean verified outcome of the same
metric and task type before the experiment began, 0 where the unit has none, and ``h`` the
indicator that it has one. A unit without history is then handled the standard way: ``h``
gives the new units their own intercept, so their missing ``x`` biases nothing (the
indicator the paper proposes for units without pre-period data; the same as filling ``x``
with the mean of the units that have one). ``theta`` is the pooled within-arm regression slope of the unit
value on ``z``, so the adjusted difference is exactly the treatment coefficient of the OLS fit
``v ~ 1 + treatment + x + h`` (ANCOVA); each arm's variance is that of its residuals
``v - theta' z``, and the difference's squared standard error is the sum over the arms of
that variance over the arm's units (the paper's variance of the adjusted difference, with
each arm's own variance).

Everything here works on centered sums, the form the look's sufficient statistics take
(``sql/select_arm_statistics.sql``), vectorised over rows (comparisons x nights x strata), and
on the same sums of a family's history for the plan's expected reduction
(:func:`explained_share`). The confidence sequence of the decision reads the adjusted
difference and its variance: the asymptotic confidence sequence of Waudby-Smith, Arbour,
Sinha, Kennedy and Ramdas (2024) rests on an asymptotically linear estimator and a
consistent variance, which the regression-adjusted difference and its residual variance are
(GrowthBook runs its sequential CUPED the same way).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

RCOND = 1e-9
"""Relative cut of the pseudo-inverse: a covariate direction with less variance than this share
of the largest one is dropped (``x`` constant, or every unit with or without history)."""


class Moments(NamedTuple):
    """Centered sums of one group of units (an arm, or a family's history), arrays of one shape.

    Attributes:
        n: units.
        mean_v, mean_x, mean_h: means of the unit value, the covariate and its indicator.
        s_vv: sum of squared deviations of the unit value from its mean.
        s_xx, s_hh, s_xh: the same of ``x`` and ``h``, and their cross-product.
        s_xv, s_hv: cross-products of ``x`` and of ``h`` with the unit value.
    """

    n: np.ndarray
    mean_v: np.ndarray
    mean_x: np.ndarray
    mean_h: np.ndarray
    s_vv: np.ndarray
    s_xx: np.ndarray
    s_hh: np.ndarray
    s_xh: np.ndarray
    s_xv: np.ndarray
    s_hv: np.ndarray


def _matrices(m: Moments) -> tuple[np.ndarray, np.ndarray]:
    """(``S_zz`` as ``(..., 2, 2)``, ``S_zv`` as ``(..., 2)``) of ``m``."""
    zz = np.stack([np.stack([m.s_xx, m.s_xh], -1), np.stack([m.s_xh, m.s_hh], -1)], -2)
    zv = np.stack([m.s_xv, m.s_hv], -1)
    return zz, zv


def slope(zz: np.ndarray, zv: np.ndarray) -> np.ndarray:
    """``theta = S_zz^+ S_zv`` row by row (pseudo-inverse: a direction without variance gets no
    weight); 0 where the sums are not finite."""
    ok = np.isfinite(zz).all(axis=(-1, -2)) & np.isfinite(zv).all(axis=-1)
    safe_zz = np.where(ok[..., None, None], zz, 0.0)
    safe_zv = np.where(ok[..., None], zv, 0.0)
    theta = np.einsum("...ij,...j->...i", np.linalg.pinv(safe_zz, rcond=RCOND, hermitian=True), safe_zv)
    return np.where(ok[..., None], theta, 0.0)


def residual_sum(m: Moments, theta: np.ndarray) -> np.ndarray:
    """Sum of squared deviations of ``v - theta' z`` in the group: ``S_vv - 2 theta' S_zv +
    theta' S_zz theta`` (never below 0)."""
    zz, zv = _matrices(m)
    quad = np.einsum("...i,...ij,...j->...", theta, zz, theta)
    return np.maximum(m.s_vv - 2 * np.einsum("...i,...i->...", theta, zv) + quad, 0.0)


class Adjusted(NamedTuple):
    """The CUPED estimate of ``treatment - control``, row by row.

    Attributes:
        theta: ``(..., 2)``: the slopes of ``x`` and ``h``.
        mean_t, mean_c: the arms' adjusted means, ``mean_v - theta' (mean_z - pooled mean_z)``.
        diff: ``mean_t - mean_c`` (the OLS treatment coefficient).
        resid_t, resid_c: each arm's sum of squared residuals (:func:`residual_sum`).
        applies: some unit has a covariate direction with variance (else nothing changes).
    """

    theta: np.ndarray
    mean_t: np.ndarray
    mean_c: np.ndarray
    diff: np.ndarray
    resid_t: np.ndarray
    resid_c: np.ndarray
    applies: np.ndarray


def adjust(t: Moments, c: Moments) -> Adjusted:
    """The adjusted difference of two arms from their centered sums (module docstring).

    ``theta`` is fitted on the sums of both arms added (the within-arm pooled slope); the arms'
    means and sums otherwise stay their own."""
    zz_t, zv_t = _matrices(t)
    zz_c, zv_c = _matrices(c)
    theta = slope(zz_t + zz_c, zv_t + zv_c)
    n = t.n + c.n
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.stack([(t.n * t.mean_x + c.n * c.mean_x) / n, (t.n * t.mean_h + c.n * c.mean_h) / n], -1)
    shift_t = np.einsum("...i,...i->...", theta, np.stack([t.mean_x, t.mean_h], -1) - pooled)
    shift_c = np.einsum("...i,...i->...", theta, np.stack([c.mean_x, c.mean_h], -1) - pooled)
    mean_t, mean_c = t.mean_v - shift_t, c.mean_v - shift_c
    applies = np.abs(theta).sum(axis=-1) > 0
    return Adjusted(theta, mean_t, mean_c, mean_t - mean_c, residual_sum(t, theta), residual_sum(c, theta), applies)


def explained_share(m: Moments) -> np.ndarray:
    """The share of the unit value's variance the covariate explains in one group (``rho^2``,
    the R^2 of ``v ~ 1 + x + h``): what CUPED is expected to remove (Deng et al. 2013,
    ``var(Y_cv) = var(Y) (1 - rho^2)``). NaN where ``s_vv`` is 0 or not finite."""
    zz, zv = _matrices(m)
    theta = slope(zz, zv)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.einsum("...i,...i->...", theta, zv) / m.s_vv
    return np.where(np.isfinite(share) & (m.s_vv > 0), np.clip(share, 0.0, 1.0), np.nan)


def explained_share_bound(share: np.ndarray, n: np.ndarray, confidence: float | None,
                          predictors: int = 2) -> np.ndarray:
    """A one-sided lower confidence bound of the population ``rho^2`` from a sample's ``R^2``:
    the variance reduction a plan may count on before the experiment has run.

    A sample ``R^2`` over-states ``rho^2`` (it is biased upwards, by about ``k / n`` for ``k``
    predictors) and varies: a plan that takes it at its word would plan too few units about
    half the time, and a small history would lose the registered power on average. The bound
    is centered on the adjusted ``R^2``, ``1 - (1 - R^2) (n - 1) / (n - k - 1)``, and lies
    ``z_confidence`` standard errors below it, with the large-sample variance of ``R^2`` of
    Olkin and Finn (1995), ``4 R^2 (1 - R^2)^2 (n - k - 1)^2 / ((n^2 - 1) (n + 3))``. It is held
    within ``[0, R^2]``.

    Args:
        share: the sample's ``R^2`` (:func:`explained_share`).
        n: the units it was measured on.
        confidence: one-sided level of the bound in (0, 1); None for the sample ``R^2`` as
            measured (the plug-in, which the simulations compare the bound with).
        predictors: ``k``, the covariate's columns (``x`` and ``h``).

    Returns:
        The bound, broadcast over the inputs; NaN where ``share`` is NaN or ``n <= k + 1``.

    References:
        Olkin and Finn (1995), "Correlations redux", Psychological Bulletin 118:155-164;
        Deng, Xu, Kohavi, Walker (2013) for ``1 - rho^2``, the share of the variance CUPED keeps.

    Examples:
        >>> round(float(explained_share_bound(0.25, 1000, 0.9)), 4)
        0.2182
        >>> float(explained_share_bound(0.25, 1000, None))
        0.25
    """
    r2 = np.asarray(share, dtype=float)
    n = np.asarray(n, dtype=float)
    if confidence is None:
        return np.where(n > predictors + 1, r2, np.nan)
    dof = n - predictors - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        adjusted = 1 - (1 - r2) * (n - 1) / dof
        se = np.sqrt(4 * r2 * (1 - r2) ** 2 * dof**2 / ((n**2 - 1) * (n + 3)))
        bound = np.clip(adjusted - stats.norm.ppf(confidence) * se, 0.0, r2)
    return np.where(dof > 0, bound, np.nan)


def difference_share(share: ArrayLike, var_c: ArrayLike, var_t: ArrayLike, ratio: ArrayLike = 1.0,
                     kept: ArrayLike = 1.0) -> np.ndarray:
    """The share of the difference's variance CUPED removes, from the share ``rho^2`` of the
    control's variance the covariate explains.

    A history measures ``rho^2`` on outcomes without the treatment: on the control's variance
    ``var_c``, where the covariate explains ``cov(x, y)^2 / var(x) = rho^2 var_c``. In the
    treatment arm it explains ``kept^2`` times that, ``kept`` being the share of the covariance
    the treatment keeps: 1 for a treatment that moves every unit by the same amount; for a rate,
    a treatment that turns a share ``d / (1 - p)`` of every unit's failures into successes (an
    increase ``d`` at baseline ``p``; of its successes, for a decrease) keeps ``1 - d / (1 - p)``
    (each unit's rate ``p_i`` becomes ``p_i + d (1 - p_i) / (1 - p)``), and a unit that always
    succeeds cannot gain. So the difference's variance ``var_c / n + var_t / (r n)`` falls by
    ``rho^2 var_c (1 + kept^2 / r) / n``: a share ``rho^2 var_c (1 + kept^2 / r) / (var_c + var_t / r)``
    of it; ``rho^2`` when nothing changes between the arms (Deng, Xu, Kohavi, Walker 2013:
    ``var(Y_cv) = var(Y) (1 - rho^2)`` in each arm).

    Args:
        share: ``rho^2`` of the control (a bound, :func:`explained_share_bound`).
        var_c, var_t: the arms' per-unit variances the plan assumes (``stats.power.arm_variances``).
        ratio: treatment units per control unit ``r``.
        kept: the share of the covariance with the covariate the treatment arm keeps.

    Returns:
        The share, broadcast; NaN where an input is not finite or ``var_c + var_t / r`` is not positive.

    Examples:
        >>> # 0.30 -> 0.35 with rho^2 = 0.25: kept = 1 - 0.05 / 0.70 = 0.9286, so
        >>> # 0.25 x 0.21 x (1 + 0.86224) / (0.21 + 0.2275) = 0.22347
        >>> round(float(difference_share(0.25, 0.21, 0.2275, kept=1 - 0.05 / 0.7)), 4)
        0.2235
        >>> round(float(difference_share(0.25, 1.0, 1.0)), 4)  # equal arms, nothing changed: rho^2
        0.25
    """
    r2, vc, vt, r, k = (np.asarray(a, dtype=float) for a in (share, var_c, var_t, ratio, kept))
    with np.errstate(invalid="ignore", divide="ignore"):
        total = vc + vt / r
        out = r2 * vc * (1 + k**2 / r) / total
    return np.where(np.isfinite(out) & (total > 0), out, np.nan)
