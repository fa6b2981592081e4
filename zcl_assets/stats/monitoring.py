"""Anytime-valid monitoring of a rate against a ceiling (contract violations of an experiment).

DESIGN section 6, rule 1: an experiment is ``invalid`` when its contract violations exceed
their threshold. A share read every night would cross a fixed threshold by chance on a
small day, and ``invalid`` is sticky, so the rule asks for evidence that the rate of
violating rows exceeds the threshold, valid under repeated looks: a one-sided mixture
likelihood ratio (Robbins 1970), a nonnegative supermartingale under every rate at or
below the threshold.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special

from ._validate import as_float, check_alpha, check_counts, out

__all__ = ["VIOLATION_THRESHOLD", "RateTest", "rate_exceeds"]

VIOLATION_THRESHOLD = 0.05
"""Share of an experiment's rows (assignments and outcomes) that may be quarantined before
its comparisons cannot be trusted. The Udacity export (tests/end_to_end) loses 2.6% to
exclusions and is fine; a tracker that drops one row in twenty is not."""


class RateTest(NamedTuple):
    """One-sided anytime-valid test of ``rate > threshold``.

    Attributes:
        e_value: Mixture likelihood ratio at this look (1 with no rows).
        pvalue: ``min(1, 1 / e_value)`` (take the running minimum over looks for the
            anytime-valid p-value). NaN for NaN input.
    """

    e_value: np.ndarray
    pvalue: np.ndarray


def rate_exceeds(x, n, threshold: float = VIOLATION_THRESHOLD) -> RateTest:
    """Mixture test of H0: rate <= threshold against rate > threshold, for x events in n trials.

    With ``p0`` the threshold and a uniform mixing distribution on ``(p0, 1)``,

        E = (1 / (1 - p0)) * integral_{p0}^{1} q^x (1 - q)^(n - x) dq / (p0^x (1 - p0)^(n - x))
          = B(x + 1, n - x + 1) I_{1 - p0}(n - x + 1, x + 1) / ((1 - p0) p0^x (1 - p0)^(n - x)).

    For every ``q >= p0`` the likelihood ratio of ``q`` to ``p0`` is a supermartingale when
    the true rate is at most ``p0`` (its one-step mean ``p q / p0 + (1 - p)(1 - q)/(1 - p0)``
    is at most 1), so the mixture is too, and by Ville's inequality
    ``P(sup_t E_t >= 1/alpha) <= alpha``: fire when the running maximum reaches ``1/alpha``.

    Args:
        x: Violating rows so far (cumulative), any shape.
        n: Rows so far (cumulative), same shape, ``x <= n``.
        threshold: ``p0`` in (0, 1).

    Returns:
        :class:`RateTest` of the broadcast shape.

    Raises:
        ValueError: threshold outside (0, 1), negative counts or x > n.

    References:
        Robbins, H. (1970). Statistical methods related to the law of the iterated
        logarithm. Annals of Mathematical Statistics 41:1397-1409. Howard, Ramdas,
        McAuliffe, Sekhon (2021), Annals of Statistics (mixture supermartingales).

    Examples:
        >>> round(float(rate_exceeds(0, 0).e_value), 6)
        1.0
        >>> bool(rate_exceeds(30, 100).pvalue < 0.01)
        True
    """
    p0 = check_alpha(threshold)
    x, n = np.broadcast_arrays(as_float(x), as_float(n))
    check_counts(x, n)
    ok = np.isfinite(x) & np.isfinite(n)
    xs, ns = np.where(ok, x, 0.0), np.where(ok, n, 0.0)  # pragma: no mutate
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_e = (
            special.betaln(xs + 1, ns - xs + 1)
            + np.log(special.betainc(ns - xs + 1, xs + 1, 1 - p0))
            - np.log1p(-p0)
            - xs * np.log(p0)
            - (ns - xs) * np.log1p(-p0)
        )
        log_e = np.where(ns == 0, 0.0, log_e)
        e = np.where(ok, np.exp(log_e), np.nan)
        p = np.where(ok, np.minimum(1.0, np.exp(-log_e)), np.nan)
    return RateTest(out(e), out(p))
