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
