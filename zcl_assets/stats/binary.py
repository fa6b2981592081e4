"""Two-arm tests and intervals for binary outcomes (descriptive, fixed horizon).

Every function takes successes and trials per arm as NumPy-broadcastable
arrays, treatment first, and reports the difference treatment minus control.
Invalid arguments raise ``ValueError``; degenerate data (an empty arm, NaN
counts) give NaN fields, never an exception or a spurious small p-value.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special, stats

from ._validate import as_float, check_alpha, check_counts, out

__all__ = ["FisherResult", "ScoreResult", "fisher_exact", "miettinen_nurminen"]


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


def _prepare(x_t, n_t, x_c, n_c):
    x_t, n_t, x_c, n_c = np.broadcast_arrays(as_float(x_t), as_float(n_t), as_float(x_c), as_float(n_c))
    check_counts(x_t, n_t, "x_t", "n_t")
    check_counts(x_c, n_c, "x_c", "n_c")
    ok = np.isfinite(x_t) & np.isfinite(n_t) & np.isfinite(x_c) & np.isfinite(n_c) & (n_t > 0) & (n_c > 0)
    return x_t, n_t, x_c, n_c, ok


MAX_FISHER_SUPPORT = 4096
"""Largest support (values of the success count in the treatment arm given the margins)
that :func:`fisher_exact` evaluates; the look calls it only for tables with an
expected cell below 5, whose support is far smaller."""

_FISHER_TIE = 1e-7  # R's fisher.test: probabilities within a relative 1e-7 count as equal


def fisher_exact(x_t, n_t, x_c, n_c, alpha: float = 0.05) -> FisherResult:
    """Fisher's exact test and the conditional odds-ratio interval for many tables at once.

    The conditional distribution of the treatment successes ``X`` given both margins is
    Fisher's noncentral hypergeometric with odds ratio ``psi`` (central when ``psi = 1``),
    evaluated for every table on a padded grid of its support (no Python loop over
    tables):

    * p-value: the sum of the central probabilities not larger than that of the observed
      table (ties within a relative 1e-7, as R's ``fisher.test``);
    * conditional MLE of ``psi``: the root of ``E_psi[X] = x``;
    * interval: ``psi_L`` with ``P_psi(X >= x) = alpha/2`` and ``psi_U`` with
      ``P_psi(X <= x) = alpha/2`` (Cornfield 1956), found by bisection on ``log psi``.

    Args:
        x_t: Successes in treatment, broadcastable with the others.
        n_t: Trials in treatment.
        x_c: Successes in control.
        n_c: Trials in control.
        alpha: Two-sided level of the interval, in (0, 1).

    Returns:
        :class:`FisherResult` with the broadcast shape. NaN where an arm is empty, an input
        is NaN/inf, or the support exceeds :data:`MAX_FISHER_SUPPORT` (use the score test
        there); the odds ratio and interval are NaN when a margin of the table is zero,
        0 at the low end of the support and ``inf`` at the high end.

    Raises:
        ValueError: alpha outside (0, 1), a negative count, or x > n.

    References:
        Fisher (1935); Cornfield (1956); R ``fisher.test`` (same definitions).

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
    hi = np.full(shape, np.nan)  # pragma: no mutate
    m = np.round(x_t + x_c)
    low_x = np.maximum(0.0, m - n_c)
    high_x = np.minimum(m, n_t)
    width = np.where(ok, high_x - low_x + 1, 0)
    sel = ok & (width <= MAX_FISHER_SUPPORT)
    if not sel.any():
        return FisherResult(out(p), out(orr), out(lo), out(hi))
    xt, nt, nc, mm, l0, h0 = (a[sel] for a in (np.round(x_t), n_t, n_c, m, low_x, high_x))
    w = int(width[sel].max())
    grid = l0[:, None] + np.arange(w)[None, :]
    valid = grid <= h0[:, None]
    g = np.where(valid, grid, l0[:, None])
    log_c = (special.gammaln(nt + 1)[:, None] - special.gammaln(g + 1) - special.gammaln(nt[:, None] - g + 1)
             + special.gammaln(nc + 1)[:, None] - special.gammaln(mm[:, None] - g + 1)  # pragma: no mutate
             - special.gammaln(nc[:, None] - mm[:, None] + g + 1))
    log_c = np.where(valid, log_c, -np.inf)
    log_c -= log_c.max(axis=1, keepdims=True)
    central = np.exp(log_c)
    central /= central.sum(axis=1, keepdims=True)
    obs = (xt - l0).astype(np.int64)
    rows = np.arange(xt.size)
    p_obs = central[rows, obs]
    p[sel] = np.minimum(1.0, np.sum(np.where(central <= p_obs[:, None] * (1 + _FISHER_TIE), central, 0.0), axis=1))

    def probs(log_psi):
        lp = log_c + log_psi[:, None] * g
        lp = np.where(valid, lp, -np.inf)
        lp -= lp.max(axis=1, keepdims=True)
        e = np.exp(lp)
        return e / e.sum(axis=1, keepdims=True)

    def bisect(fun, lo_, hi_, iters=80):
        # fun increasing in log psi; finds its root in [lo_, hi_]
        a, b = np.full(xt.size, lo_), np.full(xt.size, hi_)
        for _ in range(iters):
            mid = 0.5 * (a + b)
            up = fun(mid) > 0
            b, a = np.where(up, mid, b), np.where(up, a, mid)
        return 0.5 * (a + b)

    at_low, at_high = xt <= l0, xt >= h0
    identified = (mm > 0) & (mm < nt + nc)
    ge = g >= xt[:, None]
    le = g <= xt[:, None]
    half = alpha / 2.0
    log_mle = bisect(lambda lp: np.sum(probs(lp) * g, axis=1) - xt, -60.0, 60.0)
    log_lo = bisect(lambda lp: np.sum(np.where(ge, probs(lp), 0.0), axis=1) - half, -60.0, 60.0)
    log_hi = bisect(lambda lp: half - np.sum(np.where(le, probs(lp), 0.0), axis=1), -60.0, 60.0)
    mle = np.where(at_low, 0.0, np.where(at_high, np.inf, np.exp(log_mle)))
    lower = np.where(at_low, 0.0, np.exp(log_lo))
    upper = np.where(at_high, np.inf, np.exp(log_hi))
    orr[sel] = np.where(identified, mle, np.nan)
    lo[sel] = np.where(identified, lower, np.nan)
    hi[sel] = np.where(identified, upper, np.nan)
    return FisherResult(out(p), out(orr), out(lo), out(hi))


class _MNTables(NamedTuple):
    """Per-table constants of the Miettinen-Nurminen statistic (computed once per call)."""

    p1: np.ndarray
    n1: np.ndarray
    n2: np.ndarray
    a: np.ndarray  # 1 + n2/n1
    b0: np.ndarray  # -(1 + theta + p1 + theta p2)
    t2: np.ndarray  # theta + 2
    c0: np.ndarray  # p1 + theta p2
    c1: np.ndarray  # 2 p1 + theta + 1
    d_hat: np.ndarray
    correction: np.ndarray  # N / (N - 1)

    @classmethod
    def of(cls, x1, n1, x2, n2):
        p1, p2 = x1 / n1, x2 / n2
        theta = n2 / n1
        big_n = n1 + n2
        return cls(p1, n1, n2, 1.0 + theta, -(1.0 + theta + p1 + theta * p2), theta + 2.0,
                   p1 + theta * p2, 2.0 * p1 + theta + 1.0, p1 - p2, big_n / (big_n - 1.0))

    def take(self, idx):
        return _MNTables(*(f[idx] for f in self))

    def restricted(self, delta):
        """Restricted MLE (p1~, p2~) under p1 - p2 = delta: the closed-form cubic root.

        Farrington & Manning (1990), eq. (2.2)-(2.4), solving the likelihood equation of
        Miettinen & Nurminen (1985), appendix.
        """
        a = self.a
        b = self.b0 - delta * self.t2
        c = delta * delta + delta * self.c1 + self.c0
        d = -self.p1 * delta * (1.0 + delta)
        b3a = b / (3.0 * a)
        v = b3a**3 - b3a * c / (2.0 * a) + d / (2.0 * a)
        u = np.sqrt(np.maximum(b3a * b3a - c / (3.0 * a), 0.0))
        u = np.where(v >= 0, u, -u)  # pragma: no mutate
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(u != 0, v / (u * u * u), 0.0)
        w = (np.pi + np.arccos(np.clip(ratio, -1.0, 1.0))) / 3.0
        p1t = np.clip(2.0 * u * np.cos(w) - b3a, 0.0, 1.0)
        p2t = np.clip(p1t - delta, 0.0, 1.0)
        return p1t, p2t

    def se(self, delta):
        """Standard error of p1 - p2 at the restricted MLE, with the N/(N-1) correction."""
        p1t, p2t = self.restricted(delta)
        return np.sqrt((p1t * (1 - p1t) / self.n1 + p2t * (1 - p2t) / self.n2) * self.correction)

    def z(self, delta):
        """Score statistic for H0: p1 - p2 = delta; 0 when the estimate equals delta."""
        num = self.d_hat - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            z = num / self.se(delta)
        return np.where(np.abs(num) < 1e-14, 0.0, z)


def _mn_restricted_mle(p1, n1, p2, n2, delta):
    """Restricted MLE of (p1, p2) under p1 - p2 = delta (closed-form cubic), vectorised."""
    return _MNTables.of(p1 * n1, n1, p2 * n2, n2).restricted(delta)


def _mn_z(x1, n1, x2, n2, delta):
    """Miettinen-Nurminen score statistic for H0: p1 - p2 = delta."""
    return _MNTables.of(x1, n1, x2, n2).z(delta)


_EDGE = 1e-9
_ROOT_TOL = 1e-13


def _illinois(f, a, b, fa, fb, tol=_ROOT_TOL, ftol=1e-10, max_iter=200):
    """Vectorised Illinois (modified regula falsi) for f(a) > 0 > f(b), elementwise.

    Every element keeps its own bracket, so convergence is guaranteed; only elements not
    yet converged are evaluated at each step. An element is done when its bracket is
    narrower than ``tol`` or ``|f| <= ftol`` (for the score statistic, 1e-10 in z units
    moves the limit by 1e-10 standard errors). Returns the bracket end closest to the root.
    """
    a, b, fa, fb = (np.array(v, dtype=float) for v in (a, b, fa, fb))
    side = np.zeros(a.shape, dtype=np.int8)
    active = np.flatnonzero(np.abs(b - a) > tol)
    for _ in range(max_iter):
        if active.size == 0:
            break
        aa, bb, ffa, ffb = a[active], b[active], fa[active], fb[active]
        c = (aa * ffb - bb * ffa) / (ffb - ffa)
        c = np.where(np.isfinite(c) & (c > np.minimum(aa, bb)) & (c < np.maximum(aa, bb)), c, 0.5 * (aa + bb))
        fc = f(c, active)
        same = np.sign(fc) == np.sign(ffa)
        s = side[active]
        # move the end on the root's side; halve the kept end's value after two moves alike
        new_a = np.where(same, c, aa)
        new_fa = np.where(same, fc, np.where(s == -1, 0.5 * ffa, ffa))
        new_b = np.where(same, bb, c)
        new_fb = np.where(same, np.where(s == 1, 0.5 * ffb, ffb), fc)
        a[active], fa[active], b[active], fb[active] = new_a, new_fa, new_b, new_fb
        side[active] = np.where(same, 1, -1)
        exact = np.abs(fc) <= ftol
        done = (np.abs(new_b - new_a) <= tol * np.maximum(1.0, np.abs(c))) | exact
        a[active[exact]] = c[exact]
        b[active[exact]] = c[exact]
        active = active[~done]
    return np.where(np.abs(fa) <= np.abs(fb), a, b)


def _mn_limits(x1, n1, x2, n2, zcrit):
    """Score interval: the set of delta with |z(delta)| <= zcrit, vectorised.

    Each end solves ``z(delta) = +/- zcrit``, i.e. the fixed point
    ``delta = d_hat -/+ zcrit * se(delta)`` (``se`` at the restricted MLE). Stage 1 runs the
    secant method on that fixed-point equation from the Wald limit (three to five steps
    to 1e-13 once the arms hold more than a few dozen units); stage 2 solves the tables it
    leaves (small or boundary tables) by the bracketed Illinois method on ``z``, which
    always converges. An end where no difference is rejected is -1 or 1. No loop over tables.
    """
    x1, n1, x2, n2 = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (x1, n1, x2, n2))  # pragma: no mutate
    tables = _MNTables.of(x1, n1, x2, n2)
    d_hat = tables.d_hat
    zc = float(zcrit)
    lo_edge, hi_edge = -1.0 + _EDGE, 1.0 - _EDGE
    p1, p2 = x1 / n1, x2 / n2
    wald_se = np.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)

    def solve(sign):
        # sign -1: lower end (z = +zc), sign +1: upper end (z = -zc)
        result = np.full(d_hat.shape, np.nan)
        # secant on h(delta) = d_hat + sign zc se(delta) - delta, from the Wald limit and
        # one fixed-point step; h is the residual in units of the difference itself
        active = np.flatnonzero(wald_se > 0)
        t = tables.take(active)
        x0 = t.d_hat + sign * zc * wald_se[active]
        h0 = t.d_hat + sign * zc * t.se(x0) - x0
        x1 = x0 + h0
        for _ in range(12):
            if active.size == 0:
                break
            h1 = t.d_hat + sign * zc * t.se(x1) - x1
            done = np.isfinite(h1) & (np.abs(h1) <= _ROOT_TOL) & (x1 > lo_edge) & (x1 < hi_edge)
            result[active[done]] = x1[done]
            with np.errstate(divide="ignore", invalid="ignore"):
                x2 = x1 - h1 * (x1 - x0) / (h1 - h0)
            x2 = np.where(np.isfinite(x2) & (h1 != h0), x2, x1 + h1)
            keep = ~done & np.isfinite(x2) & (x2 > lo_edge) & (x2 < hi_edge)
            active, t = active[keep], t.take(keep)
            x0, h0, x1 = x1[keep], h1[keep], x2[keep]
        todo = np.flatnonzero(np.isnan(result))
        if todo.size == 0:
            return result
        t = tables.take(todo)
        target = -sign * zc
        edge = lo_edge if sign < 0 else hi_edge  # pragma: no mutate
        f_edge = t.z(np.full(todo.shape, edge)) - target
        dh = t.d_hat
        if sign < 0:  # root in (edge, d_hat): f(edge) > 0 > f(d_hat)
            none = (dh <= edge) | (f_edge <= 0)
            a, fa, b, fb = np.full(todo.shape, edge), f_edge, dh.copy(), np.full(todo.shape, -target)
        else:  # root in (d_hat, edge): f(d_hat) > 0 > f(edge)
            none = (dh >= edge) | (f_edge >= 0)
            a, fa, b, fb = dh.copy(), np.full(todo.shape, -target), np.full(todo.shape, edge), f_edge
        result[todo[none]] = -1.0 if sign < 0 else 1.0
        rest = np.flatnonzero(~none)
        if rest.size:
            sub = t.take(rest)
            result[todo[rest]] = _illinois(lambda d, i: sub.take(i).z(d) - target,
                                           a[rest], b[rest], fa[rest], fb[rest])
        return result

    return solve(-1.0), solve(1.0)


def miettinen_nurminen(x_t, n_t, x_c, n_c, alpha: float = 0.05, margin: float = 0.0) -> ScoreResult:
    """Miettinen-Nurminen score test and interval for a difference of proportions.

    The statistic is ``z = (p_t - p_c - margin) / sqrt(V)`` where ``V`` is the
    variance of the difference at the restricted MLE under
    ``p_t - p_c = margin`` (closed-form cubic root, Farrington and Manning
    1990), times the Miettinen-Nurminen correction ``N / (N - 1)``. The
    interval inverts the same statistic: its ends are the two roots of
    ``|z(delta)| = z_{1 - alpha/2}``, found for all tables at once by the Illinois
    method (bracketed, to 1e-13), so a look over many comparisons has no Python loop.
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
    x1, n1, x2, n2 = safe(x_t, 0.0), safe(n_t, 1.0), safe(x_c, 0.0), safe(n_c, 1.0)  # pragma: no mutate
    diff = np.where(ok, x1 / n1 - x2 / n2, np.nan)
    z = np.where(ok, _mn_z(x1, n1, x2, n2, margin), np.nan)
    with np.errstate(invalid="ignore"):
        p = np.where(ok, 2.0 * stats.norm.sf(np.abs(z)), np.nan)
    zcrit = stats.norm.isf(alpha / 2.0)
    lo = np.full(diff.shape, np.nan)
    hi = np.full(diff.shape, np.nan)
    sel = np.broadcast_to(ok, diff.shape)
    if sel.any():
        low, high = _mn_limits(x1[sel], n1[sel], x2[sel], n2[sel], zcrit)
        lo[sel], hi[sel] = low, high
    return ScoreResult(out(diff), out(lo), out(hi), out(z), out(p))
