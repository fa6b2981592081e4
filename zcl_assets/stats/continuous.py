"""Two-arm tests for continuous outcomes (descriptive, fixed horizon).

Welch's t from sufficient statistics (the caps of time and tokens are applied in the
aggregation SQL, before any sum). Difference convention: treatment minus control.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ._validate import check_alpha, out, two_arms

__all__ = ["WelchResult", "welch"]


class WelchResult(NamedTuple):
    """Welch's unequal-variance t test and interval.

    Attributes:
        diff: mean_t - mean_c, in the metric's units. NaN if an input is NaN.
        ci_low: Lower end of the ``1 - alpha`` t interval.
        ci_high: Upper end.
        statistic: t statistic, diff / standard error.
        df: Welch-Satterthwaite degrees of freedom.
        pvalue: Two-sided p-value.

    ``ci_low``, ``ci_high``, ``statistic``, ``df`` and ``pvalue`` are NaN when
    the standard error is zero (both arms constant: no evidence either way,
    where scipy would report a tiny p-value; a variance within a relative 1e-10
    of the squared mean counts as zero, see ``_validate.guard_variance``), when an arm has fewer than 2
    units (sample variance undefined), or when an input is NaN/inf.
    """

    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    pvalue: np.ndarray


def welch(n_t, mean_t, var_t, n_c, mean_c, var_c, alpha: float = 0.05) -> WelchResult:
    """Welch's t test and interval from sufficient statistics.

    The p-value comes from ``scipy.stats.ttest_ind_from_stats(...,
    equal_var=False)``; the standard error ``sqrt(var_t/n_t + var_c/n_c)``, the
    Welch-Satterthwaite df and the interval ``diff +/- t_{1-alpha/2, df} se``
    are computed here (same formulas), fully vectorised.

    Args:
        n_t: Units in treatment (count), broadcastable with the others.
        mean_t: Mean of the metric in treatment (metric units).
        var_t: Sample variance in treatment (ddof = 1; units squared).
        n_c: Units in control.
        mean_c: Mean in control.
        var_c: Sample variance in control (ddof = 1).
        alpha: Two-sided level, in (0, 1).

    Returns:
        WelchResult with the broadcast shape; see the class for NaN cases.

    Raises:
        ValueError: alpha outside (0, 1), a negative n or a negative variance.

    References:
        Welch, B. L. (1947). The generalization of "Student's" problem when
        several different population variances are involved. Biometrika
        34:28-35. Satterthwaite, F. E. (1946). Biometrics Bulletin 2:110-114.
    """
    alpha = check_alpha(alpha)
    n_t, mean_t, var_t, n_c, mean_c, var_c, finite = two_arms(n_t, mean_t, var_t, n_c, mean_c, var_c)
    with np.errstate(invalid="ignore"):
        enough = finite & (n_t >= 2) & (n_c >= 2)
    nt, nc = np.where(enough, n_t, 2.0), np.where(enough, n_c, 2.0)
    vt, vc = np.where(enough, var_t, 1.0), np.where(enough, var_c, 1.0)
    a, b = vt / nt, vc / nc
    se = np.sqrt(a + b)
    ok = enough & (se > 0)
    se = np.where(ok, se, 1.0)
    a, b = np.where(ok, a, 1.0), np.where(ok, b, 1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # subnormal variances underflow
        df = (a + b) ** 2 / (a**2 / (nt - 1) + b**2 / (nc - 1))
    ok = ok & np.isfinite(df)
    df = np.where(ok, df, 1.0)
    diff = mean_t - mean_c
    tstat = np.where(ok, diff, 0.0) / se
    res = stats.ttest_ind_from_stats(
        np.where(ok, mean_t, 0.0), np.sqrt(vt), nt, np.where(ok, mean_c, 0.0), np.sqrt(vc), nc, equal_var=False  # pragma: no mutate
    )
    half = stats.t.ppf(1.0 - alpha / 2.0, df) * se
    nan = np.nan
    return WelchResult(
        diff=out(np.where(finite, diff, nan)),
        ci_low=out(np.where(ok, diff - half, nan)),
        ci_high=out(np.where(ok, diff + half, nan)),  # pragma: no mutate
        statistic=out(np.where(ok, tstat, nan)),
        df=out(np.where(ok, df, nan)),
        pvalue=out(np.where(ok, res.pvalue, nan)),
    )
