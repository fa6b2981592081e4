"""Two-arm tests and intervals for binary outcomes (descriptive, fixed horizon).

Every function takes successes and trials per arm as NumPy-broadcastable
arrays, treatment first, and reports the difference treatment minus control.
Invalid arguments raise ``ValueError``; degenerate data (an empty arm, NaN
counts) give NaN fields, never an exception or a spurious small p-value.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import optimize, stats
from scipy.stats.contingency import odds_ratio as _odds_ratio

from ._validate import as_float, check_alpha, check_counts, out

__all__ = [
    "FisherResult",
    "ScoreResult",
    "Interval",
    "ChiSquareResult",
    "fisher_exact",
    "miettinen_nurminen",
    "newcombe_interval",
    "chi_square_2x2",
]


class FisherResult(NamedTuple):
    """Fisher's exact test with the conditional odds-ratio interval.

    Attributes:
        pvalue: Two-sided exact p-value (scipy's "sum of probabilities no
            larger than the observed" definition). NaN when an arm is empty
            (n = 0) or an input is NaN/inf.
        odds_ratio: Conditional maximum-likelihood odds ratio, odds of
            success in treatment over control. ``inf`` when control has no
            successes or treatment no failures (and the table is not
            degenerate), 0 in the mirror case; NaN when a margin of the table
            is zero (all successes or all failures overall) or an arm is empty.
        ci_low: Lower end of the exact conditional interval for the odds
            ratio at level ``1 - alpha``; NaN as for ``odds_ratio``.
        ci_high: Upper end; may be ``inf``.
    """

    pvalue: np.ndarray
    odds_ratio: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray


class ScoreResult(NamedTuple):
    """Miettinen-Nurminen score test and its matching interval.

    Attributes:
        diff: Observed difference of proportions, treatment minus control.
        ci_low: Lower end of the score interval for the difference; -1 when
            no difference is rejected on that side.
        ci_high: Upper end; 1 likewise.
        statistic: Score statistic z for H0: difference = margin (positive
            when the observed difference exceeds the margin).
        pvalue: Two-sided p-value for H0: difference = margin. By
            construction ``pvalue < alpha`` iff ``margin`` lies outside
            ``[ci_low, ci_high]``.

    All fields are NaN when an arm is empty (n = 0) or an input is NaN/inf.
    """

    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    statistic: np.ndarray
    pvalue: np.ndarray


class Interval(NamedTuple):
    """A point estimate with its interval.

    Attributes:
        diff: Difference of proportions, treatment minus control.
        ci_low: Lower end of the interval.
        ci_high: Upper end of the interval.

    All fields are NaN when an arm is empty (n = 0) or an input is NaN/inf.
    """

    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray


class ChiSquareResult(NamedTuple):
    """Pearson chi-square test of a 2x2 table.

    Attributes:
        statistic: Chi-square statistic (1 df), Yates-corrected if requested.
            NaN when an arm is empty, a column of the table is empty (no
            successes or no failures at all: the test is undefined), or an
            input is NaN/inf.
        pvalue: Upper-tail chi-square(1) p-value. NaN as for ``statistic``,
            and also when ``guard`` is on and ``min_expected < 5`` (reason:
            the chi-square approximation is unreliable; use Fisher's test).
        min_expected: Smallest expected cell count under independence.
    """

    statistic: np.ndarray
    pvalue: np.ndarray
    min_expected: np.ndarray


def _prepare(x_t, n_t, x_c, n_c):
    x_t, n_t, x_c, n_c = np.broadcast_arrays(as_float(x_t), as_float(n_t), as_float(x_c), as_float(n_c))
    check_counts(x_t, n_t, "x_t", "n_t")
    check_counts(x_c, n_c, "x_c", "n_c")
    ok = np.isfinite(x_t) & np.isfinite(n_t) & np.isfinite(x_c) & np.isfinite(n_c) & (n_t > 0) & (n_c > 0)
    return x_t, n_t, x_c, n_c, ok


def fisher_exact(x_t, n_t, x_c, n_c, alpha: float = 0.05, interval: bool = True) -> FisherResult:
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
        >>> round(float(fisher_exact(5, 5, 0, 5).pvalue), 5)
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


def _mn_restricted_mle(p1, n1, p2, n2, delta):
    """Restricted MLE of (p1, p2) under p1 - p2 = delta (closed-form cubic).

    Farrington & Manning (1990), eq. (2.2)-(2.4), solving the likelihood
    equation of Miettinen & Nurminen (1985), appendix. Vectorised.
    """
    theta = n2 / n1
    a = 1.0 + theta
    b = -(1.0 + theta + p1 + theta * p2 + delta * (theta + 2.0))
    c = delta**2 + delta * (2.0 * p1 + theta + 1.0) + p1 + theta * p2
    d = -p1 * delta * (1.0 + delta)
    v = b**3 / (27.0 * a**3) - b * c / (6.0 * a**2) + d / (2.0 * a)
    u = np.where(v >= 0, 1.0, -1.0) * np.sqrt(np.maximum(b**2 / (9.0 * a**2) - c / (3.0 * a), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(u != 0, v / u**3, 0.0)
    w = (np.pi + np.arccos(np.clip(ratio, -1.0, 1.0))) / 3.0
    p1t = np.clip(2.0 * u * np.cos(w) - b / (3.0 * a), 0.0, 1.0)
    p2t = np.clip(p1t - delta, 0.0, 1.0)
    return p1t, p2t


def _mn_z(x1, n1, x2, n2, delta):
    """Miettinen-Nurminen score statistic for H0: p1 - p2 = delta."""
    p1, p2 = x1 / n1, x2 / n2
    p1t, p2t = _mn_restricted_mle(p1, n1, p2, n2, delta)
    big_n = n1 + n2
    var = (p1t * (1 - p1t) / n1 + p2t * (1 - p2t) / n2) * big_n / (big_n - 1.0)
    num = p1 - p2 - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        z = num / np.sqrt(var)
    # Exact agreement with the null gives 0 even when the variance is 0.
    return np.where(np.abs(num) < 1e-14, 0.0, z)


_EDGE = 1e-9


def _mn_limits(x1, n1, x2, n2, zcrit):
    """Score interval: the set of delta with |z(delta)| <= zcrit, by brentq."""
    d_hat = x1 / n1 - x2 / n2

    def f(delta, target):
        return float(_mn_z(x1, n1, x2, n2, delta)) - target

    lo_edge, hi_edge = -1.0 + _EDGE, 1.0 - _EDGE
    if d_hat <= lo_edge or f(lo_edge, zcrit) <= 0:
        low = -1.0
    else:
        low = optimize.brentq(f, lo_edge, d_hat, args=(zcrit,), xtol=1e-13, rtol=1e-13)
    if d_hat >= hi_edge or f(hi_edge, -zcrit) >= 0:
        high = 1.0
    else:
        high = optimize.brentq(f, d_hat, hi_edge, args=(-zcrit,), xtol=1e-13, rtol=1e-13)
    return low, high


def miettinen_nurminen(x_t, n_t, x_c, n_c, alpha: float = 0.05, margin: float = 0.0) -> ScoreResult:
    """Miettinen-Nurminen score test and interval for a difference of proportions.

    The statistic is ``z = (p_t - p_c - margin) / sqrt(V)`` where ``V`` is the
    variance of the difference at the restricted MLE under
    ``p_t - p_c = margin`` (closed-form cubic root, Farrington and Manning
    1990), times the Miettinen-Nurminen correction ``N / (N - 1)``. The
    interval inverts the same statistic: its ends are the two roots of
    ``|z(delta)| = z_{1 - alpha/2}``, found with ``scipy.optimize.brentq``.
    Test and interval are therefore consistent by construction: the p-value
    is below ``alpha`` iff ``margin`` lies outside the interval.

    Written here because statsmodels' ``confint_proportions_2indep(
    method="score")`` raises on small or boundary tables (e.g. 9/10 vs 3/10,
    0/10 vs 0/20, 10/10 vs 0/20 in statsmodels 0.15).

    Args:
        x_t: Successes in treatment, broadcastable with the others.
        n_t: Trials in treatment.
        x_c: Successes in control.
        n_c: Trials in control.
        alpha: Two-sided level, in (0, 1).
        margin: Null difference (treatment minus control), in (-1, 1).

    Returns:
        ScoreResult with the broadcast shape. NaN everywhere when an arm is
        empty or an input is NaN/inf. Zero successes in both arms (or all
        successes in both) give a valid interval and p = 1 at margin 0.

    Raises:
        ValueError: alpha outside (0, 1), margin outside (-1, 1), a negative
            count, or x > n.

    References:
        Miettinen, O. and Nurminen, M. (1985). Comparative analysis of two
        rates. Statistics in Medicine 4:213-226.
        Farrington, C. P. and Manning, G. (1990). Test statistics and sample
        size formulae for comparative binomial trials with null hypothesis
        of non-zero risk difference or non-unity relative risk. Statistics in
        Medicine 9:1447-1454.
        Newcombe, R. G. (1998). Statistics in Medicine 17:873-890 (method 6).
    """
    alpha = check_alpha(alpha)
    margin = float(margin)
    if not (-1.0 < margin < 1.0):
        raise ValueError(f"margin must lie in (-1, 1), got {margin!r}")
    x_t, n_t, x_c, n_c, ok = _prepare(x_t, n_t, x_c, n_c)
    safe = lambda a, fill: np.where(ok, a, fill)  # noqa: E731
    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)
    diff = np.where(ok, x1 / n1 - x2 / n2, np.nan)
    z = np.where(ok, _mn_z(x1, n1, x2, n2, margin), np.nan)
    with np.errstate(invalid="ignore"):
        p = np.where(ok, 2.0 * stats.norm.sf(np.abs(z)), np.nan)
    zcrit = stats.norm.isf(alpha / 2.0)
    lo = np.full(diff.shape, np.nan)
    hi = np.full(diff.shape, np.nan)
    for idx in zip(*np.nonzero(ok)) if diff.shape else ([()] if ok else []):
        lo[idx], hi[idx] = _mn_limits(x1[idx], n1[idx], x2[idx], n2[idx], zcrit)
    return ScoreResult(out(diff), out(lo), out(hi), out(z), out(p))


def _wilson(x, n, z):
    centre = (x + z * z / 2.0) / (n + z * z)
    half = z * np.sqrt(x * (n - x) / n + z * z / 4.0) / (n + z * z)
    return centre - half, centre + half


def newcombe_interval(x_t, n_t, x_c, n_c, alpha: float = 0.05) -> Interval:
    """Newcombe's hybrid score interval for a difference of proportions.

    Method 10 of Newcombe (1998): with Wilson score limits ``(l_t, u_t)`` and
    ``(l_c, u_c)`` for each arm, ``L = d - sqrt((p_t - l_t)^2 + (u_c - p_c)^2)``
    and ``U = d + sqrt((u_t - p_t)^2 + (p_c - l_c)^2)``, no continuity
    correction. Closed form, fully vectorised.

    Args:
        x_t: Successes in treatment, broadcastable with the others.
        n_t: Trials in treatment.
        x_c: Successes in control.
        n_c: Trials in control.
        alpha: Two-sided level, in (0, 1).

    Returns:
        Interval with the broadcast shape; NaN when an arm is empty or an
        input is NaN/inf. Zero or all successes give a valid interval.

    Raises:
        ValueError: alpha outside (0, 1), a negative count, or x > n.

    References:
        Newcombe, R. G. (1998). Interval estimation for the difference between
        independent proportions: comparison of eleven methods. Statistics in
        Medicine 17:873-890.
        Wilson, E. B. (1927). JASA 22:209-212.
    """
    alpha = check_alpha(alpha)
    x_t, n_t, x_c, n_c, ok = _prepare(x_t, n_t, x_c, n_c)
    z = stats.norm.isf(alpha / 2.0)
    x1, n1 = np.where(ok, x_t, 0.0), np.where(ok, n_t, 1.0)
    x2, n2 = np.where(ok, x_c, 0.0), np.where(ok, n_c, 1.0)
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = _wilson(x1, n1, z)
    l2, u2 = _wilson(x2, n2, z)
    d = p1 - p2
    low = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    nan = np.nan
    return Interval(out(np.where(ok, d, nan)), out(np.where(ok, low, nan)), out(np.where(ok, high, nan)))


def chi_square_2x2(x_t, n_t, x_c, n_c, correction: bool = True, guard: bool = True) -> ChiSquareResult:
    """Pearson chi-square test of independence for the 2x2 table, vectorised.

    Matches ``scipy.stats.chi2_contingency(table, correction=...)``
    including scipy's form of the Yates correction (each ``|O - E|`` is
    reduced by ``min(0.5, |O - E|)``), computed in closed form so that many
    tables run in one call.

    Args:
        x_t: Successes in treatment, broadcastable with the others.
        n_t: Trials in treatment.
        x_c: Successes in control.
        n_c: Trials in control.
        correction: Apply the Yates continuity correction.
        guard: If True (default), return NaN p-values when any expected cell
            is below 5: the approximation is unreliable there, use
            :func:`fisher_exact`. Set False only to reproduce textbook values.

    Returns:
        ChiSquareResult with the broadcast shape; see the class for NaN cases.

    Raises:
        ValueError: a negative count or x > n.

    References:
        Yates, F. (1934). Contingency tables involving small numbers and the
        chi-squared test. Supplement to JRSS 1:217-235.
    """
    x_t, n_t, x_c, n_c, ok = _prepare(x_t, n_t, x_c, n_c)
    obs = np.stack([x_t, n_t - x_t, x_c, n_c - x_c], axis=-1)
    rows = np.stack([n_t, n_t, n_c, n_c], axis=-1)
    total = n_t + n_c
    succ = x_t + x_c
    cols = np.stack([succ, total - succ, succ, total - succ], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = rows * cols / total[..., None]
        dev = np.abs(obs - exp)
        if correction:
            dev = dev - np.minimum(0.5, dev)
        stat = np.sum(dev**2 / exp, axis=-1)
    min_exp = np.where(ok, exp.min(axis=-1), np.nan)
    defined = ok & (min_exp > 0)
    stat = np.where(defined, stat, np.nan)
    p = np.where(defined, stats.chi2.sf(np.where(defined, stat, 0.0), 1), np.nan)
    if guard:
        p = np.where(min_exp >= 5, p, np.nan)
    return ChiSquareResult(out(stat), out(p), out(min_exp))
