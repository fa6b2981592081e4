"""Error control across comparisons: alpha slots between experiments, Holm within."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_float, out

__all__ = ["HolmSteps", "holm_steps", "alpha_slot"]


class HolmSteps(NamedTuple):
    """Holm's procedure on many families at once, with the level each p-value is read at.

    Attributes:
        adjusted: Holm-adjusted p-values (undefined p counted as 1 and reported as 1).
        level: The level at which the procedure reads each comparison: ``alpha / (m - r + 1)``
            for the comparison of rank ``r`` (ascending p) while every smaller p was
            rejected, and the level of the first non-rejected step for it and every later
            one. A confidence sequence read at ``level`` excludes zero exactly when Holm
            rejects (``p < level``).
        reject: ``p < level``.
        family_size: ``m``, the number of comparisons in the family.
    """

    adjusted: np.ndarray
    level: np.ndarray
    reject: np.ndarray
    family_size: np.ndarray


def holm_steps(pvalues, groups, alpha) -> HolmSteps:
    """Holm (1979) step-down within every group, vectorised (no loop over groups).

    Args:
        pvalues: 1-D array of p-values in [0, 1]; NaN counts as 1 (an undefined test still
            takes its place in the family).
        groups: 1-D array of group labels (any sortable dtype), one family per label.
        alpha: Family-wise level per element (1-D array or scalar), constant within a group.

    Returns:
        :class:`HolmSteps` of 1-D arrays in the input order. Ties in p are broken by input
        position, so the result is deterministic.

    Raises:
        ValueError: arrays of different lengths, or a p-value outside [0, 1].

    References:
        Holm, S. (1979). Scandinavian Journal of Statistics 6:65-70.
    """
    p = as_float(pvalues).ravel()
    g = np.asarray(groups).ravel()
    a = np.broadcast_to(as_float(alpha), p.shape).astype(float)  # pragma: no mutate
    if g.shape != p.shape:
        raise ValueError("pvalues and groups must have the same length")
    if np.any(np.isinf(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1] (NaN allowed)")
    n = p.size
    if n == 0:
        empty = np.zeros(0)
        return HolmSteps(empty, empty, np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64))
    q = np.where(np.isnan(p), 1.0, p)
    order = np.lexsort((np.arange(n), q, g))
    gs, qs, as_ = g[order], q[order], a[order]
    start = np.ones(n, dtype=bool)
    start[1:] = gs[1:] != gs[:-1]
    gid = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    size = np.diff(np.append(first, n))
    m = size[gid]
    rank = np.arange(n) - first[gid] + 1
    step = m - rank + 1
    # adjusted: running max of min(1, step * p) within each group, one pass per rank (the
    # loop runs over ranks, at most the largest family size, never over groups)
    adjusted = np.minimum(1.0, step * qs)
    for r in range(2, int(size.max()) + 1):
        at = np.flatnonzero(rank == r)
        adjusted[at] = np.maximum(adjusted[at], adjusted[at - 1])
    passes = qs < as_ / step
    # a step is rejected only if every earlier step of its group is: running AND per group
    fails_so_far = np.cumsum(~passes)
    before_group = np.where(first > 0, fails_so_far[np.maximum(first - 1, 0)], 0)[gid]
    before_group = np.where(first[gid] > 0, before_group, 0)
    rejected = (fails_so_far - before_group) == 0
    # rank of the first non-rejected step (m + 1 when all are rejected)
    n_rejected = np.add.reduceat(rejected.astype(np.int64), first)[gid]
    effective = np.minimum(rank, n_rejected + 1)
    level = as_ / (m - effective + 1)
    out_adj = np.empty(n)
    out_level = np.empty(n)
    out_rej = np.empty(n, dtype=bool)
    out_m = np.empty(n, dtype=np.int64)
    out_adj[order], out_level[order], out_rej[order], out_m[order] = adjusted, level, rejected, m
    return HolmSteps(out_adj, out_level, out_rej, out_m)


def alpha_slot(alpha, k_slots: int) -> np.ndarray:
    """Alpha share of one experiment slot: ``alpha / K`` (Bonferroni across slots).

    Args:
        alpha: Registered alpha of each experiment (any shape); a value outside (0, 1)
            gives NaN (a registration the contract would have refused).
        k_slots: Number of concurrent experiment slots K (integer >= 1).

    Returns:
        ``alpha / K``, same shape.

    Raises:
        ValueError: K not a positive integer (a setting, never data).

    Examples:
        >>> float(alpha_slot(0.05, 4))
        0.0125
    """
    if int(k_slots) != k_slots or k_slots < 1:
        raise ValueError(f"k_slots must be a positive integer, got {k_slots!r}")
    a = as_float(alpha)
    return out(np.where((a > 0) & (a < 1), a / int(k_slots), np.nan))
