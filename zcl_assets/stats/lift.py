"""Relative lift with a log-scale delta-method interval."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ._validate import check_alpha, out, two_arms

__all__ = ["LiftResult", "relative_lift"]


class LiftResult(NamedTuple):
    """Relative lift of treatment over control.

    Attributes:
        lift: mean_t / mean_c - 1 (0.10 means +10 %).
        ci_low: Lower end of the ``1 - alpha`` interval, exp(log ratio - z se) - 1.
        ci_high: Upper end.
        se_log: Delta-method standard error of log(mean_t / mean_c).

    All fields are NaN when a mean is <= 0 (log undefined), an n is 0, or
    an input is NaN/inf. The interval and ``se_log`` are also NaN when the
    standard error is zero (both arms without variance: no information on
    the uncertainty, a zero-width interval would be spurious).
    """

    lift: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    se_log: np.ndarray


def relative_lift(mean_t, var_t, n_t, mean_c, var_c, n_c, alpha: float = 0.05) -> LiftResult:
    """Relative lift with a delta-method interval on the log ratio.

    ``Var(log mean) ~= var / (n * mean^2)``, so
    ``se = sqrt(var_t/(n_t mean_t^2) + var_c/(n_c mean_c^2))`` and the interval
    is ``exp(log(mean_t/mean_c) +/- z_{1-alpha/2} se) - 1``: asymmetric, and
    never below -100 %. For a binary metric pass ``var = p (1 - p)``.

    Args:
        mean_t: Treatment mean (metric units, must be > 0), broadcastable.
        var_t: Treatment variance of one unit's value (units squared).
        n_t: Treatment units.
        mean_c: Control mean (> 0).
        var_c: Control variance.
        n_c: Control units.
        alpha: Two-sided level, in (0, 1).

    Returns:
        LiftResult with the broadcast shape; see the class for NaN cases.

    Raises:
        ValueError: alpha outside (0, 1), a negative variance or n.

    References:
        Kohavi, Tang, Xu (2020), Trustworthy Online Controlled Experiments,
        ch. 18 (relative differences). Deng, Lu, Litz (2018), Applying the
        delta method in metric analytics, KDD (section on percent change).
    """
    alpha = check_alpha(alpha)
    n_t, mean_t, var_t, n_c, mean_c, var_c, finite = two_arms(n_t, mean_t, var_t, n_c, mean_c, var_c)
    with np.errstate(invalid="ignore"):
        ok = finite & (mean_t > 0) & (mean_c > 0) & (n_t > 0) & (n_c > 0)
    mt, mc = np.where(ok, mean_t, 1.0), np.where(ok, mean_c, 1.0)
    nt, nc = np.where(ok, n_t, 1.0), np.where(ok, n_c, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # means near 0 underflow: no interval
        se = np.sqrt(np.where(ok, var_t, 0.0) / (nt * mt**2) + np.where(ok, var_c, 0.0) / (nc * mc**2))  # pragma: no mutate
        log_ratio = np.log(mt / mc)
    z = stats.norm.isf(alpha / 2.0)
    has_se = ok & (se > 0) & np.isfinite(se)
    nan = np.nan
    with np.errstate(over="ignore"):  # an astronomically wide interval ends at +inf, as it should
        return LiftResult(
            lift=out(np.where(ok, np.expm1(log_ratio), nan)),
            ci_low=out(np.where(has_se, np.expm1(log_ratio - z * se), nan)),
            ci_high=out(np.where(has_se, np.expm1(log_ratio + z * se), nan)),
            se_log=out(np.where(has_se, se, nan)),
        )
