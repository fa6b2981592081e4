"""Reference forms of the SRM tests: one experiment's looks at a time, no strata, no epochs.

These are the tests of ``zcl_assets.stats.srm`` written the plain way, straight from their
papers (Lindon and Malek 2022; Wasserman, Ramdas and Balakrishnan 2020; Pearson's
goodness of fit through ``scipy.stats.chisquare``). The look runs the grid forms in
``zcl_assets.stats.srm``; the tests hold them to these oracles, as statsmodels keeps R's
output beside its tests.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats
from scipy.special import gammaln

from zcl_assets.stats._validate import as_float, check_nonnegative, out
from zcl_assets.stats.srm import CONSTANCY_WINDOW, DEFAULT_PRIOR_CONCENTRATION


class ChiSquareGOFResult(NamedTuple):
    """Chi-square goodness of fit of counts to planned shares.

    Attributes:
        statistic: Pearson chi-square with k - 1 df, shape ``counts.shape[:-1]``.
        pvalue: Upper-tail p-value. Both NaN when a row has no units or a
            count is NaN/inf.
    """

    statistic: np.ndarray
    pvalue: np.ndarray


class SequentialSRMResult(NamedTuple):
    """Anytime-valid SRM test.

    Attributes:
        bayes_factor: Dirichlet-multinomial Bayes factor against the planned
            shares at each look (1 with no units). NaN if a count is NaN/inf.
        pvalue: Anytime-valid p-value ``min(1, 1/BF)``, running minimum over
            looks when ``looks_axis`` is given. Rejecting when it falls below
            alpha, at any look, keeps the false-alarm rate below alpha.
            NaN where ``bayes_factor`` is NaN (and at all later looks).
    """

    bayes_factor: np.ndarray
    pvalue: np.ndarray


def _shares(shares, k):
    s = as_float(shares)
    if s.shape[-1:] != (k,):
        raise ValueError(f"shares must have last dimension {k}")
    if np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError("shares must be finite and positive")
    return s / s.sum(axis=-1, keepdims=True)


def srm_chisquare(counts, shares) -> ChiSquareGOFResult:
    """Chi-square goodness-of-fit test of observed arm counts to planned shares.

    ``scipy.stats.chisquare(counts, total * shares, axis=-1)``; any number of
    arms and unequal allocations.

    Args:
        counts: Units per arm, shape ``(..., k)``, k >= 2.
        shares: Planned allocation, shape ``(k,)`` or broadcastable to
            ``counts``; positive, normalised to sum 1 here.

    Returns:
        ChiSquareGOFResult of shape ``counts.shape[:-1]``.

    Raises:
        ValueError: negative counts, k < 2, or non-positive shares.

    References:
        Kohavi, Tang, Xu (2020), Trustworthy Online Controlled Experiments,
        ch. 21 (sample ratio mismatch).
    """
    c = as_float(counts)
    if c.ndim < 1 or c.shape[-1] < 2:
        raise ValueError("counts must have shape (..., k) with k >= 2")
    check_nonnegative("counts", c)
    s = _shares(shares, c.shape[-1])
    c, s = np.broadcast_arrays(c, s)
    total = c.sum(axis=-1, keepdims=True)
    ok = np.isfinite(total) & (total > 0)
    safe_c = np.where(ok, c, s)  # placeholder rows give a finite dummy result
    res = stats.chisquare(safe_c, safe_c.sum(axis=-1, keepdims=True) * s, axis=-1)
    ok = ok[..., 0]
    return ChiSquareGOFResult(out(np.where(ok, res.statistic, np.nan)), out(np.where(ok, res.pvalue, np.nan)))


def srm_sequential(
    counts, shares, prior_concentration=DEFAULT_PRIOR_CONCENTRATION, looks_axis: int | None = None
) -> SequentialSRMResult:
    """Anytime-valid SRM test (Lindon and Malek 2022), Dirichlet-multinomial.

    Under H0 the arm of each unit is multinomial with the planned shares
    ``theta0``. The alternative puts a Dirichlet(``alpha``) prior on the
    shares, ``alpha = prior_concentration * theta0``. The Bayes factor after
    cumulative counts ``x`` is, in closed form (the multinomial coefficient
    cancels),

        log BF = log B(alpha + x) - log B(alpha) - sum_i x_i log theta0_i,

    with ``B(a) = prod Gamma(a_i) / Gamma(sum a_i)``. BF is a nonnegative
    martingale under H0, so by Ville's inequality ``p = min(1, 1/BF)``
    (running minimum over looks) is an anytime-valid p-value.

    Args:
        counts: Cumulative units per arm, shape ``(..., k)``. With
            ``looks_axis`` set, one axis indexes successive looks (cumulative
            counts at each look, in time order).
        shares: Planned allocation, shape ``(k,)`` or broadcastable; positive,
            normalised here.
        prior_concentration: Total Dirichlet prior mass (> 0), a scalar or an array
            broadcastable to ``counts.shape[:-1]`` (one per row); default 100, the
            pipeline passes :func:`tuned_concentration` of the planned sample.
        looks_axis: Axis of ``counts`` (not the last) that indexes looks; the
            p-value is then the running minimum along it. None: each row is
            a single look.

    Returns:
        SequentialSRMResult of shape ``counts.shape[:-1]``.

    Raises:
        ValueError: negative counts, non-positive shares or concentration,
            k < 2, or ``looks_axis`` pointing at the arm axis.

    References:
        Lindon, M. and Malek, A. (2022). Anytime-valid inference for
        multinomial count data. NeurIPS 35.
    """
    c = as_float(counts)
    if c.ndim < 1 or c.shape[-1] < 2:
        raise ValueError("counts must have shape (..., k) with k >= 2")
    check_nonnegative("counts", c)
    conc = as_float(prior_concentration)
    if not np.all((conc > 0) & np.isfinite(conc)):
        raise ValueError("prior_concentration must be positive and finite")
    s = _shares(shares, c.shape[-1])
    c, s = np.broadcast_arrays(c, s)
    a = conc[..., None] * s
    finite = np.all(np.isfinite(c), axis=-1)
    cc = np.where(np.isfinite(c), c, 0.0)

    def log_b(v):
        return np.sum(gammaln(v), axis=-1) - gammaln(np.sum(v, axis=-1))

    log_bf = log_b(a + cc) - log_b(a) - np.sum(cc * np.log(s), axis=-1)
    log_bf = np.where(finite, log_bf, np.nan)
    with np.errstate(over="ignore"):  # a decisive mismatch overflows to an infinite factor
        bf = np.exp(log_bf)
        p = np.minimum(1.0, np.exp(-log_bf))
    if looks_axis is not None:
        ax = looks_axis % c.ndim
        if ax == c.ndim - 1:
            raise ValueError("looks_axis must not be the arm axis")
        p = np.fmin.accumulate(np.where(np.isnan(p), np.inf, p), axis=ax)
        # once a look is NaN, later running minima are not trustworthy
        bad = np.logical_or.accumulate(np.isnan(log_bf), axis=ax)
        p = np.where(bad, np.nan, p)
    return SequentialSRMResult(out(bf), out(p))


def srm_constancy(counts, window: int = CONSTANCY_WINDOW, looks_axis: int = -2) -> SequentialSRMResult:
    """Reference form of the constancy e-process of ``zcl_assets.stats.srm.srm_constancy``
    (Wasserman, Ramdas and Balakrishnan 2020, universal inference with a Krichevsky-Trofimov
    plug-in over the last ``window`` looks; the method is described there), written over one
    looks axis, without epochs, look by look, as an oracle for the vectorised form.

    Args:
        counts: Cumulative units per arm at successive looks, shape ``(..., looks, k)``;
            a decrease between looks counts as no new units.
        window: Looks of history behind each prediction (>= 1); one week of nightly looks
            by default (simulation in the tests: a 30/70 split moving to 27/73 with 2,000
            units a night is detected within 20 nights in 99.9% of runs, a constant split
            fires in under 0.1%).
        looks_axis: Axis of ``counts`` (not the last) that indexes looks.

    Returns:
        :class:`SequentialSRMResult` of shape ``counts.shape[:-1]``: ``bayes_factor`` holds
        ``E_t`` and ``pvalue`` the running anytime-valid p-value. NaN counts give NaN
        at that look and after.

    Raises:
        ValueError: negative counts, k < 2, ``looks_axis`` on the arm axis, or
            ``window < 1``.

    References:
        Wasserman, L., Ramdas, A. and Balakrishnan, S. (2020). Universal inference. PNAS
        117:16880-16890. Lindon, M. and Malek, A. (2022). Anytime-valid inference for
        multinomial count data. NeurIPS 35.
    """
    c = as_float(counts)
    if c.ndim < 2 or c.shape[-1] < 2:
        raise ValueError("counts must have shape (..., looks, k) with k >= 2")
    check_nonnegative("counts", c)
    if int(window) != window or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    ax = looks_axis % c.ndim
    if ax == c.ndim - 1:
        raise ValueError("looks_axis must not be the arm axis")
    c = np.moveaxis(c, ax, -2)
    k = c.shape[-1]
    n_looks = c.shape[-2]
    bad = np.logical_or.accumulate(~np.all(np.isfinite(c), axis=-1), axis=-1)
    cum = np.maximum.accumulate(np.where(np.isfinite(c), c, 0.0), axis=-2)
    before = np.concatenate([np.zeros_like(cum[..., :1, :]), cum], axis=-2)  # before[p]: up to look p-1
    idx = np.arange(n_looks)
    prev = before[..., idx, :]
    recent = prev - before[..., np.maximum(idx - int(window), 0), :]
    arrived = cum - prev
    theta = (recent + 0.5) / (recent.sum(axis=-1, keepdims=True) + 0.5 * k)
    log_num = np.sum(arrived * np.log(theta), axis=-1)
    log_num[..., 0] = 0.0  # the first look only seeds the prediction
    log_num = np.cumsum(log_num, axis=-1)
    rest = cum - cum[..., :1, :]
    total = rest.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mle = np.sum(np.where(rest > 0, rest * np.log(rest / total), 0.0), axis=-1)
    log_e = np.where(bad, np.nan, log_num - log_mle)
    with np.errstate(over="ignore"):
        e = np.exp(log_e)
        # log_e is NaN only from the first look with NaN counts on, where p is NaN anyway
        running = np.fmax.accumulate(log_e, axis=-1)
        p = np.where(bad, np.nan, np.minimum(1.0, np.exp(-running)))
    return SequentialSRMResult(out(np.moveaxis(e, -1, ax)), out(np.moveaxis(p, -1, ax)))
