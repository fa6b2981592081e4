"""Error control across comparisons: alpha slots between experiments, Holm within."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from statsmodels.stats.multitest import multipletests

from ._validate import as_float, check_alpha, out

__all__ = ["HolmResult", "holm", "alpha_slot", "familywise_error"]


class HolmResult(NamedTuple):
    """Holm step-down adjustment.

    Attributes:
        adjusted: Holm-adjusted p-values, same shape as the input. NaN where
            the input p-value is NaN (a comparison that could not be tested;
            it is not counted in the family).
        reject: Boolean, adjusted <= alpha; False where the input is NaN.
    """

    adjusted: np.ndarray
    reject: np.ndarray


def holm(pvalues, alpha: float = 0.05) -> HolmResult:
    """Holm (1979) step-down adjustment along the last axis, ignoring NaN.

    Each row (last axis) is one experiment's family of comparisons. NaN
    entries are left out before calling ``statsmodels.stats.multitest.
    multipletests(method="holm")`` (which would otherwise count a NaN as a
    test) and stay NaN in the output.

    Args:
        pvalues: Array of p-values in [0, 1] (or NaN), shape ``(m,)`` or
            ``(..., m)``.
        alpha: Family-wise error rate for ``reject``, in (0, 1).

    Returns:
        HolmResult with the input's shape.

    Raises:
        ValueError: alpha outside (0, 1), or a p-value outside [0, 1] or
            infinite.

    References:
        Holm, S. (1979). A simple sequentially rejective multiple test
        procedure. Scandinavian Journal of Statistics 6:65-70.
    """
    alpha = check_alpha(alpha)
    p = as_float(pvalues)
    if np.any(np.isinf(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1] (NaN allowed)")
    p2 = np.atleast_1d(p).reshape(-1, np.atleast_1d(p).shape[-1]) if p.size else np.atleast_1d(p).reshape(0, 0)
    adj = np.full(p2.shape, np.nan)
    rej = np.zeros(p2.shape, dtype=bool)
    for i, row in enumerate(p2):
        keep = ~np.isnan(row)
        if keep.any():
            r, a, _, _ = multipletests(row[keep], alpha=alpha, method="holm")
            adj[i, keep] = a
            rej[i, keep] = r
    shape = p.shape
    return HolmResult(out(adj.reshape(shape)), out(rej.reshape(shape), dtype=bool))


def alpha_slot(alpha: float, k_slots: int) -> float:
    """Alpha share of one experiment slot: ``alpha / K`` (Bonferroni across slots).

    Args:
        alpha: Organization-level error budget per task type, in (0, 1).
        k_slots: Number of concurrent experiment slots K (integer >= 1).

    Returns:
        alpha / K as a float.

    Raises:
        ValueError: alpha outside (0, 1) or K not a positive integer.
    """
    alpha = check_alpha(alpha)
    if int(k_slots) != k_slots or k_slots < 1:
        raise ValueError(f"k_slots must be a positive integer, got {k_slots!r}")
    return alpha / int(k_slots)


def familywise_error(alpha, m):
    """Family-wise error of m independent tests each at level alpha: 1 - (1 - alpha)^m.

    Args:
        alpha: Per-test level in (0, 1) (array allowed).
        m: Number of independent tests, >= 0 (array allowed).

    Returns:
        Probability of at least one false rejection under the global null.

    Raises:
        ValueError: alpha outside (0, 1) or m negative.

    Examples:
        >>> round(float(familywise_error(0.05, 8)), 3)
        0.337
    """
    a, m_arr = as_float(alpha), as_float(m)
    if np.any(~((a > 0) & (a < 1))):
        raise ValueError("alpha must lie in (0, 1)")
    if np.any(~(m_arr >= 0)):
        raise ValueError("m must be non-negative")
    return out(-np.expm1(m_arr * np.log1p(-a)))
