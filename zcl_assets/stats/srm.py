"""Sample ratio mismatch (SRM): is the observed split of units the planned one?

``srm_chisquare`` is the fixed-horizon goodness-of-fit test (reported);
``srm_sequential`` is the anytime-valid Dirichlet-multinomial test of
Lindon and Malek (2022), safe to evaluate at every nightly look (decides
``invalid`` in DESIGN section 6).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats
from scipy.special import gammaln

from ._validate import as_float, check_nonnegative, out

__all__ = ["ChiSquareGOFResult", "SequentialSRMResult", "srm_chisquare", "srm_sequential"]

DEFAULT_PRIOR_CONCENTRATION = 100.0
"""Default Dirichlet prior ``alpha = 100 * shares``: centred on the planned
split, about as informative as 100 units; sensitive to imbalances of a few
per cent after thousands of units. A registration-time choice."""


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
    counts, shares, prior_concentration: float = DEFAULT_PRIOR_CONCENTRATION, looks_axis: int | None = None
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
        prior_concentration: Total Dirichlet prior mass (> 0); default 100.
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
    conc = float(prior_concentration)
    if not (conc > 0 and np.isfinite(conc)):
        raise ValueError("prior_concentration must be positive and finite")
    s = _shares(shares, c.shape[-1])
    c, s = np.broadcast_arrays(c, s)
    a = conc * s
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
