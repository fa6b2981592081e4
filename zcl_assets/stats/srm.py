"""Sample ratio mismatch (SRM): is the observed split of units the planned one?

Every function takes the grid arrays of the look: counts ``[experiment, night, (stratum,)
arm]``, arms padded to the largest experiment (a padded arm has a NaN share or a false
``arms`` entry) and ``epoch [experiment, night]`` (``stats.epochs``), and returns a
p-value per experiment and night.

* :func:`srm_sequential`: the anytime-valid Dirichlet-multinomial test of Lindon and Malek
  (2022) against declared shares, safe to read at every nightly look (it decides
  ``invalid`` in DESIGN section 6), its prior tuned by :func:`tuned_concentration` at the
  planned sample within bounds (:func:`srm_tuning_units`, so that it has power early); also the outcome-imbalance test (verified units against the
  split assigned).
* :func:`srm_constancy`: when no allocation was declared, the anytime-valid test that the
  split stays the same across looks (it never fires on a split that is unequal but
  constant), with the chi-square test of homogeneity of the nightly arrivals beside it.
* :func:`srm_chisquare`: the fixed-horizon goodness-of-fit test (reported, never deciding).

Level: the tests fire at ``SRM_ALPHA = 0.01``. Why 0.01 and not the 0.001 that Kohavi,
Tang and Xu (2020) recommend: their 0.001 is for one fixed-horizon chi-square read once.
An anytime-valid test pays for looking every night; tuned at the planned sample ``N*``,
it fires at ``N*`` when the single-look chi-square statistic exceeds
``(1 + 1/L)(2 log(1/alpha) + log(1 + L))`` with ``L = -2 log alpha + log(1 - 2 log alpha)``:
12.76 at alpha 0.01, i.e. a single-look p of 3.5e-4, stricter than Kohavi's 0.001. Its
false-alarm probability over every look, for ever, is at most 1%. At 0.001 it could not
detect a 52/48 split of 10,000 units (chi-square p 6e-5) at any tuning.

The one-look-at-a-time forms of these tests, straight from their papers, are the oracles
of ``tests/stats/srm_reference.py``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special

from ._validate import as_float, check_alpha, out
from .epochs import epoch_start, running_pvalue, within_epoch

__all__ = [
    "SRM_ALPHA",
    "DEFAULT_PRIOR_CONCENTRATION",
    "CONSTANCY_WINDOW",
    "ConstancyResult",
    "SRM_TUNING_UNITS",
    "srm_tuning_units",
    "tuned_concentration",
    "srm_sequential",
    "srm_constancy",
    "srm_chisquare",
]

SRM_ALPHA = 0.01
"""Level of the sequential allocation tests (see the module docstring for why)."""

DEFAULT_PRIOR_CONCENTRATION = 100.0
"""Dirichlet prior mass ``alpha = 100 * shares`` where no planned sample is known."""

CONSTANCY_WINDOW = 7
"""Looks (nights) of recent history that predict the next split in :func:`srm_constancy`."""


SRM_TUNING_UNITS = (3_000.0, 10_000.0)
"""Bounds of the units the SRM prior is tuned at (:func:`srm_tuning_units`)."""


def srm_tuning_units(planned_total) -> np.ndarray:
    """The units the sequential SRM test is tuned at: the planned total within
    :data:`SRM_TUNING_UNITS` (an unreachable or unknown plan: the upper bound).

    Why bounded: the mixture is most sensitive near the units it is tuned at, and an
    allocation fault should be caught early whatever the plan. Tuned at a large plan's
    193,000 units (an A/B export at MDE 0.01), a true 52/48 split of a 50/50 design is caught
    within its first 10,000 units in 15% of runs; tuned at 10,000 units, in 73%; below 3,000 it
    drops under 70% (0.70 at 2,000, 0.65 at 500), while the lower bound costs little power at
    small plans (a 60/40 split of 400 units: 0.50 tuned at 3,000 against 0.71 at 400). False
    alarms stay below ``SRM_ALPHA`` at any tuning (the test is anytime-valid). The figures:
    ``benchmarks/srm_tuning.py``; DESIGN section 6, "allocation check".

    Examples:
        >>> srm_tuning_units([500.0, 6_000.0, 192_876.0, np.inf]).tolist()
        [3000.0, 6000.0, 10000.0, 10000.0]
    """
    n = np.asarray(planned_total, dtype=float)
    low, high = SRM_TUNING_UNITS
    return np.where(np.isfinite(n) & (n > 0), np.clip(n, low, high), high)


def tuned_concentration(n_star, alpha: float = SRM_ALPHA) -> np.ndarray:
    """Dirichlet prior concentration that makes the SRM test most sensitive at ``n_star`` units.

    Under the normal approximation the Dirichlet-multinomial Bayes factor is a normal
    mixture whose mixing variance, per unit, is ``1 / (c + 1)`` times the multinomial
    variance (``Var(theta_i) = theta0_i (1 - theta0_i) / (c + 1)`` under the prior). The
    normal mixture is tightest at ``n_star`` when that variance is
    ``rho^2 = (-2 log alpha + log(1 - 2 log alpha)) / n_star`` (the same tuning as the
    confidence sequence, ``sequential.optimal_rho``), so

        c = n_star / (-2 log alpha + log(1 - 2 log alpha)) - 1,

    floored at 1.

    Args:
        n_star: Planned total units (all arms), positive; any shape.
        alpha: Level at which the test is read.

    Returns:
        Concentrations, same shape; :data:`DEFAULT_PRIOR_CONCENTRATION` where ``n_star``
        is not positive and finite.

    References:
        Lindon and Malek (2022); Howard et al. (2021), Sec. 3.5 (normal-mixture tuning).

    Examples:
        >>> round(float(tuned_concentration(10_000, 0.01)), 1)
        866.0
    """
    alpha = check_alpha(alpha)
    n = as_float(n_star)
    two = -2.0 * np.log(alpha)
    with np.errstate(invalid="ignore"):
        c = np.maximum(n / (two + np.log1p(two)) - 1.0, 1.0)
        return out(np.where(np.isfinite(n) & (n > 0), c, DEFAULT_PRIOR_CONCENTRATION))


def _log_bayes_factor(x: np.ndarray, theta: np.ndarray, conc: np.ndarray) -> np.ndarray:
    """Log Dirichlet-multinomial Bayes factor over the last axis; arms with NaN share left out.

    ``log BF = log B(alpha + x) - log B(alpha) - sum_i x_i log theta_i`` with
    ``alpha = conc * theta`` and ``B(a) = prod Gamma(a_i) / Gamma(sum a_i)`` (the multinomial
    coefficient cancels).
    """
    shape = np.broadcast_shapes(x.shape, theta.shape)
    arm = np.broadcast_to(~np.isnan(theta), shape)
    th = np.broadcast_to(theta, shape)[arm]
    xx = np.broadcast_to(x, shape)[arm]
    a = np.broadcast_to(np.asarray(conc)[..., None], shape)[arm] * th
    term = np.zeros(shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # only arms that exist (no padding)
        term[arm] = special.gammaln(a + xx) - special.gammaln(a) - xx * np.log(th)
    n = np.where(arm, np.broadcast_to(x, shape), 0.0).sum(axis=-1)
    conc = np.broadcast_to(conc, n.shape)
    return term.sum(axis=-1) - (special.gammaln(conc + n) - special.gammaln(conc))


def srm_sequential(counts: np.ndarray, shares: np.ndarray, concentration: np.ndarray, epoch: np.ndarray,
                   counted: np.ndarray) -> np.ndarray:
    """Anytime-valid SRM test (Lindon and Malek 2022), Dirichlet-multinomial, along the nights.

    Under H0 the arm of each unit is multinomial with the planned shares ``theta0``. The
    alternative puts a Dirichlet(``c theta0``) prior on the shares. The Bayes factor of
    the cumulative counts of a stratum is a nonnegative martingale under H0; the strata
    of an epoch are independent, so their product is one too, and by Ville's inequality
    ``p = min(1, 1 / max BF so far)`` within the epoch is an anytime-valid p-value.

    Args:
        counts: ``[E, D, S, K]`` cumulative units per stratum and arm at each night.
        shares: Shares broadcastable to ``counts`` (normalised per stratum; NaN: the arm
            does not exist).
        concentration: Prior mass ``c`` broadcastable to ``[E, D, S]``
            (:func:`tuned_concentration` of the planned sample).
        epoch: ``[E, D]`` epochs (``stats.epochs``).
        counted: ``[E, D, S]`` strata whose evidence counts at that night (those of the
            night's epoch).

    Returns:
        ``[E, D]`` p-values (1 before any evidence).

    References:
        Lindon, M. and Malek, A. (2022). Anytime-valid inference for multinomial count
        data. NeurIPS 35.
    """
    log_bf = np.where(counted, _log_bayes_factor(counts, shares, concentration), 0.0).sum(axis=2)
    return running_pvalue(log_bf, epoch)


class ConstancyResult(NamedTuple):
    """The constancy test of an undeclared split, per experiment and night.

    Attributes:
        pvalue: ``[E, D]`` anytime-valid p-value of the universal-inference e-process.
        chisquare_p: ``[E, D]`` fixed-horizon chi-square test of homogeneity of the
            epoch's nightly arrivals across arms (nights with units as rows); NaN with
            fewer than two such nights.
    """

    pvalue: np.ndarray
    chisquare_p: np.ndarray


def srm_constancy(cum: np.ndarray, arms: np.ndarray, epoch: np.ndarray, window: int = CONSTANCY_WINDOW) -> ConstancyResult:
    """Anytime-valid test that an undeclared split stays constant across looks.

    When the allocation was never declared (aggregate exports such as the ASOS data), the
    null is composite: arms receive units in constant but unknown shares ``theta``. The
    test is a universal-inference e-process (Wasserman, Ramdas and Balakrishnan 2020)
    with a predictable plug-in alternative:

        E_t = prod_{2 <= p <= t} Mult(x_p; n_p, theta~_p) / sup_theta prod_{2 <= p <= t} Mult(x_p; n_p, theta),

    with ``x_p`` the units that arrived between look ``p - 1`` and look ``p`` and
    ``theta~_p = (R_p + 1/2) / (|R_p| + k/2)`` the split of the units that arrived in the
    ``window`` looks before look ``p`` (Krichevsky-Trofimov smoothing). ``theta~_p`` is fixed
    before ``x_p`` is seen and the supremum is at least the likelihood of the true
    ``theta``, so ``E_t`` is bounded by a test martingale under every constant split, and
    ``p_t = min(1, 1 / max_{s <= t} E_s)`` is anytime valid. A split that is unequal by
    design but constant does not fire; after a change the recent split predicts the new
    arrivals better than any single split does, and ``E_t`` grows. The first look of an
    epoch only seeds the prediction. Multinomial coefficients cancel.

    Args:
        cum: ``[E, D, K]`` cumulative units per arm at each night (a decrease counts as no
            new units; a night without a look carries the counts over).
        arms: ``[E, K]`` the arm exists (the rest is padding).
        epoch: ``[E, D]`` epochs (``stats.epochs``).
        window: Looks of history behind each prediction; one week of nightly looks by
            default (simulation in the tests: a 30/70 split moving to 27/73 with 2,000
            units a night is detected within 20 nights in 99.9% of runs, a constant split
            fires in under 0.1%).

    Returns:
        :class:`ConstancyResult`.

    References:
        Wasserman, L., Ramdas, A. and Balakrishnan, S. (2020). Universal inference. PNAS
        117:16880-16890. Lindon, M. and Malek, A. (2022). Anytime-valid inference for
        multinomial count data. NeurIPS 35.
    """
    n_nights = cum.shape[1]
    n_arms = arms.sum(axis=1)
    night = np.arange(n_nights)[None, :]
    start = epoch_start(epoch)  # [E, D]
    mask = arms[:, None, :]
    cum = np.where(mask, np.maximum.accumulate(cum, axis=1), 0.0)

    def at(offset):  # cumulative counts `offset` nights back, 0 before the epoch
        back = night - offset
        inside = back >= start
        idx = np.clip(back, 0, n_nights - 1)
        val = np.take_along_axis(cum, np.broadcast_to(idx[..., None], cum.shape), axis=1)
        return np.where(inside[..., None], val, 0.0)

    prev, old = at(1), at(window + 1)
    arrived = cum - prev
    recent = prev - old
    k = n_arms[:, None, None].astype(float)
    theta = (recent + 0.5) / (recent.sum(axis=2, keepdims=True) + 0.5 * k)
    first_night = night == start
    with np.errstate(divide="ignore", invalid="ignore"):
        num = np.where(mask & ~first_night[..., None], arrived * np.log(theta), 0.0).sum(axis=2)
    num = within_epoch(np.add, num, epoch, 0.0)
    seed = np.take_along_axis(cum, np.broadcast_to(start[..., None], cum.shape), axis=1)
    rest = cum - seed
    rest_total = rest.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mle = np.where(rest > 0, rest * np.log(rest / rest_total), 0.0).sum(axis=2)
        p = running_pvalue(num - mle, epoch)
        look_total = arrived.sum(axis=2, keepdims=True)
        sq = within_epoch(np.add, np.where(look_total > 0, arrived**2 / look_total, 0.0), epoch, 0.0)
        ratio = np.where(cum > 0, sq / cum, 0.0).sum(axis=2)
    total = cum.sum(axis=2)
    chi = total * ratio - total
    nights_with_units = within_epoch(np.add, (look_total[..., 0] > 0).astype(float), epoch, 0.0)
    df = (n_arms[:, None] - 1) * (nights_with_units - 1)
    chi_p = np.where(df > 0, special.chdtrc(np.maximum(df, 1), np.maximum(chi, 0.0)), np.nan)
    return ConstancyResult(p, chi_p)


def srm_chisquare(observed: np.ndarray, expected: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """Pearson's chi-square goodness of fit of observed to expected units, over the last axis.

    ``X^2 = sum_i (o_i - e_i)^2 / e_i`` over the arms that exist (an arm expected to get no
    units adds nothing), ``k - 1`` degrees of freedom for ``k`` arms.

    Args:
        observed: ``[..., K]`` units per arm.
        expected: ``[..., K]`` units the declared shares expect (strata summed).
        arms: ``[..., K]`` the arm exists.

    Returns:
        ``[...]`` p-values; NaN where no unit was observed.

    References:
        Kohavi, Tang, Xu (2020), Trustworthy Online Controlled Experiments, ch. 21 (sample
        ratio mismatch); ``scipy.stats.chisquare`` (the same statistic).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        chi = np.where(arms & (expected > 0), (observed - expected) ** 2 / expected, 0.0).sum(axis=-1)
    df = np.maximum(arms.sum(axis=-1) - 1, 1)
    return np.where(observed.sum(axis=-1) > 0, special.chdtrc(df, chi), np.nan)
