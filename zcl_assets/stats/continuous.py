"""Two-arm tests for continuous outcomes (descriptive, fixed horizon).

Welch's t from sufficient statistics, Mann-Whitney on raw samples, and the
cap-and-sign transform that makes "positive" mean "beneficial" for every
metric. Difference convention: treatment minus control.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from ._validate import as_float, check_alpha, check_nonnegative, guard_variance, out

__all__ = ["WelchResult", "MannWhitneyResult", "welch", "mann_whitney", "apply_direction_and_cap"]


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


class MannWhitneyResult(NamedTuple):
    """Mann-Whitney U test.

    Attributes:
        statistic: U statistic of the treatment sample (number of pairs with
            treatment > control, ties counted 1/2). NaN if undefined.
        pvalue: Two-sided p-value. NaN when a sample is empty, a value is
            NaN, or all values in both samples are equal (no ranking).
        method: The p-value method actually used: "asymptotic" or "exact".
        use_continuity: Whether the continuity correction was applied.
    """

    statistic: float
    pvalue: float
    method: str
    use_continuity: bool


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
    arrs = np.broadcast_arrays(*(as_float(a) for a in (n_t, mean_t, var_t, n_c, mean_c, var_c)))
    n_t, mean_t, var_t, n_c, mean_c, var_c = arrs
    for name, a in (("n_t", n_t), ("n_c", n_c), ("var_t", var_t), ("var_c", var_c)):
        check_nonnegative(name, a)
    finite = np.all([np.isfinite(a) for a in arrs], axis=0)
    var_t, var_c = guard_variance(var_t, mean_t), guard_variance(var_c, mean_c)
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
        np.where(ok, mean_t, 0.0), np.sqrt(vt), nt, np.where(ok, mean_c, 0.0), np.sqrt(vc), nc, equal_var=False
    )
    half = stats.t.ppf(1.0 - alpha / 2.0, df) * se
    nan = np.nan
    return WelchResult(
        diff=out(np.where(finite, diff, nan)),
        ci_low=out(np.where(ok, diff - half, nan)),
        ci_high=out(np.where(ok, diff + half, nan)),
        statistic=out(np.where(ok, tstat, nan)),
        df=out(np.where(ok, df, nan)),
        pvalue=out(np.where(ok, res.pvalue, nan)),
    )


def mann_whitney(sample_t, sample_c, method: str = "asymptotic", use_continuity: bool = True) -> MannWhitneyResult:
    """Two-sided Mann-Whitney U test on raw samples, with settings pinned.

    Calls ``scipy.stats.mannwhitneyu(sample_t, sample_c,
    alternative="two-sided", method=method, use_continuity=use_continuity)``.
    The defaults are pinned explicitly (asymptotic normal approximation with
    tie correction and continuity correction) so results do not change when
    scipy changes its ``"auto"`` rule. ``method="exact"`` is allowed for
    small samples without ties.

    Args:
        sample_t: 1-D array of treatment values (metric units).
        sample_c: 1-D array of control values.
        method: "asymptotic" or "exact".
        use_continuity: Continuity correction (asymptotic method only).

    Returns:
        MannWhitneyResult; see the class for NaN cases.

    Raises:
        ValueError: method not "asymptotic"/"exact", or a sample not 1-D.

    References:
        Mann, H. B. and Whitney, D. R. (1947). Annals of Mathematical
        Statistics 18:50-60.
    """
    if method not in ("asymptotic", "exact"):
        raise ValueError(f"method must be 'asymptotic' or 'exact', got {method!r}")
    t, c = as_float(sample_t), as_float(sample_c)
    if t.ndim != 1 or c.ndim != 1:
        raise ValueError("samples must be 1-D")
    nan_result = MannWhitneyResult(np.nan, np.nan, method, bool(use_continuity))
    if t.size == 0 or c.size == 0 or not (np.all(np.isfinite(t)) and np.all(np.isfinite(c))):
        return nan_result
    u_stat = float(stats.mannwhitneyu(t, c, alternative="two-sided", method="asymptotic").statistic)
    if np.ptp(np.concatenate([t, c])) == 0:  # all equal: the test has no information
        return MannWhitneyResult(u_stat, np.nan, method, bool(use_continuity))
    res = stats.mannwhitneyu(t, c, alternative="two-sided", method=method, use_continuity=use_continuity)
    return MannWhitneyResult(float(res.statistic), float(res.pvalue), method, bool(use_continuity))


def apply_direction_and_cap(values, direction: str, cap=None):
    """Cap a metric at its registered limit, then sign it so positive is good.

    Order: values above ``cap`` are set to ``cap`` (time, tokens: a runaway
    session counts as the limit, not as its raw size), then the result is
    multiplied by -1 when ``direction == "decrease"`` (lower is better), so
    that for every metric a positive treatment-minus-control difference means
    the treatment is beneficial. NaN stays NaN.

    Args:
        values: Array of raw metric values (any shape, metric units).
        direction: "increase" (higher is better) or "decrease".
        cap: Registered upper limit in the metric's units, broadcastable with
            ``values``; None for no cap.

    Returns:
        Float array (NumPy scalar for scalar input) of transformed values.

    Raises:
        ValueError: direction not "increase"/"decrease", or cap NaN.
    """
    if direction not in ("increase", "decrease"):
        raise ValueError(f"direction must be 'increase' or 'decrease', got {direction!r}")
    v = as_float(values)
    if cap is not None:
        cap_arr = as_float(cap)
        if np.any(np.isnan(cap_arr)):
            raise ValueError("cap must not be NaN")
        v = np.where(np.isnan(v), np.nan, np.minimum(v, cap_arr))
    if direction == "decrease":
        v = -v
    return out(v)
