"""Oracle for the plan's inflation R: the calibrated cells of ``R_TABLE``, read by hand.

The calibration itself is tested against an independent simulation of the confidence
sequence (``tests/stats/test_power.py``); plans in other tests take R from here, bilinear in
``log(alpha)`` and in power between the cells, written out without the product's interpolator.
"""

from __future__ import annotations

import bisect
import math

from zcl_assets.stats.power import R_POWERS, R_TABLE


def _bracket(grid: list[float], x: float) -> tuple[int, float]:
    """Index of the cell below ``x`` and the weight of the one above (clamped to the grid)."""
    x = min(max(x, grid[0]), grid[-1])
    i = min(bisect.bisect_right(grid, x) - 1, len(grid) - 2)
    return i, (x - grid[i]) / (grid[i + 1] - grid[i])


def r_reference(alpha: float, power: float) -> float:
    """R of a comparison at ``alpha`` and per-test ``power``."""
    alphas = sorted(R_TABLE)
    i, u = _bracket([math.log(a) for a in alphas], math.log(alpha))
    j, w = _bracket(list(R_POWERS), power)
    cell = lambda a, p: R_TABLE[alphas[a]][p]  # noqa: E731
    return ((1 - u) * ((1 - w) * cell(i, j) + w * cell(i, j + 1))
            + u * ((1 - w) * cell(i + 1, j) + w * cell(i + 1, j + 1)))
