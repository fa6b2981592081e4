"""Power and feasibility for the test that decides: planned sample and power reached.

The decision is made by a confidence sequence (CS, see ``sequential``), looked at every
night. Its power at a given sample is lower than a fixed-horizon z-test's, so the
planned sample inflates the z-test sample by a factor ``R`` calibrated by simulation at
the comparison's alpha and power (:data:`R_TABLE`, ``benchmarks/calibrate_cs_inflation.py``)
and by ``1 / v`` for the expected share ``v`` of outcomes that are verified:

    N_plan = max(min_samples, ceil(R * n_fixed / v)).

All sample sizes are per arm and refer to the control arm; the treatment arm is planned
at ``allocation_ratio`` times the control arm. All functions broadcast over NumPy arrays
and never raise on data values.

Fixed-horizon sample (two-sided two-sample z-test on the difference, unpooled variance):

    n_c = (z_{1-alpha/2} + z_{power})^2 * (s_c^2 + s_t^2 / r) / mde^2,

with ``s_c^2 = p (1 - p)`` and ``s_t^2 = (p + mde)(1 - p - mde)`` for a binary metric at
baseline ``p`` (``mde`` signed in the registered direction), or ``s_c = s_t = sd`` for a
continuous metric, and ``r = n_t / n_c``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats
from scipy.interpolate import RegularGridInterpolator

__all__ = ["FALLBACK_TUNING_UNITS", "R_POWERS", "R_TABLE", "PlannedSample", "arm_variances", "inflation_at", "mde_reachable", "n_fixed", "planned_sample", "power_at", "per_test_power"]

# Inflation R of the fixed-horizon z-test sample that keeps the registered power at N_plan
# for the CS decision, calibrated where it is used: at the comparison's own alpha (the
# experiment's alpha share over its comparisons, the level its plan and CS tuning take) and
# its per-test power. Produced by ``python benchmarks/calibrate_cs_inflation.py --table``
# (400,000 Brownian paths shared by every cell, seed 20261129): CS tuned at N_plan, 30
# evenly spaced nightly looks up to N_plan, no decision before look 7 (the 7-day burn-in),
# adopt = CS lower bound > 0 at some look; each cell is the upper end of the 95% Monte Carlo
# interval of the power quantile of the per-path critical R (largest s.e. 0.015, at alpha
# 0.5 and power 0.5; 0.002 to 0.005 where experiments are). The arm at the MDE is planned as
# if the experiment's other arms had no effect (Holm's first step is then the only one that
# adopts it), so the power holds in every configuration of the other arms.
R_POWERS: tuple[float, ...] = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999)
R_TABLE: dict[float, tuple[float, ...]] = {  # comparison alpha: R at each of R_POWERS
    0.5: (5.405, 3.166, 2.660, 2.256, 2.052, 1.804, 1.649),
    0.2: (2.841, 2.260, 2.064, 1.874, 1.769, 1.622, 1.520),
    0.1: (2.319, 1.983, 1.858, 1.726, 1.651, 1.538, 1.456),
    0.05: (2.044, 1.818, 1.728, 1.627, 1.570, 1.478, 1.411),
    0.025: (1.874, 1.705, 1.636, 1.557, 1.510, 1.434, 1.375),
    0.0125: (1.755, 1.624, 1.568, 1.503, 1.463, 1.398, 1.344),
    0.005: (1.646, 1.545, 1.501, 1.448, 1.415, 1.361, 1.314),
    0.001: (1.521, 1.450, 1.418, 1.381, 1.355, 1.312, 1.275),
    0.0001: (1.414, 1.365, 1.343, 1.316, 1.297, 1.265, 1.238),
    1e-05: (1.346, 1.311, 1.293, 1.273, 1.258, 1.233, 1.211),
    1e-06: (1.299, 1.272, 1.258, 1.241, 1.229, 1.209, 1.190),
    1e-07: (1.265, 1.242, 1.231, 1.217, 1.207, 1.189, 1.175),
    1e-08: (1.239, 1.219, 1.210, 1.198, 1.190, 1.174, 1.162),
}

def inflation_at(alpha: ArrayLike, power: ArrayLike) -> np.ndarray:
    """R for a comparison at level ``alpha`` and per-test ``power``, from :data:`R_TABLE`.

    Linear in ``log(alpha)`` and in ``power`` between the calibrated cells (R is convex in
    both, so the chord lies above it and the interpolation errs on the side of power).
    Outside the grid the nearest edge is used: a level below 1e-8 or a power above 0.999
    takes a larger R than it needs; the contract keeps alpha at most 0.5 and power at least
    0.5, the grid's other edges.

    Args:
        alpha: Two-sided level of the comparison, in (0, 1).
        power: Per-test power, in (0, 1).

    Returns:
        R, broadcast over the inputs; NaN where alpha or power is outside (0, 1).
    """
    a = np.asarray(alpha, dtype=float)
    pw = np.asarray(power, dtype=float)
    ok = (a > 0) & (a < 1) & (pw > 0) & (pw < 1)
    levels = np.log(np.array(sorted(R_TABLE)))
    grid = np.array([R_TABLE[k] for k in sorted(R_TABLE)])
    interp = RegularGridInterpolator((levels, np.array(R_POWERS)), grid)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.clip(np.log(np.where(ok, a, 0.05)), levels[0], levels[-1])
    y = np.clip(np.where(ok, pw, 0.8), R_POWERS[0], R_POWERS[-1])
    x, y = np.broadcast_arrays(x, y)
    r = interp(np.stack([x.ravel(), y.ravel()], axis=1)).reshape(x.shape)
    return np.where(ok, r, np.nan)


FALLBACK_TUNING_UNITS: float = 5000.0
"""Units (both arms of a comparison) at which the confidence sequence is tuned when the
plan is unreachable (MDE impossible for the baseline, no sd, ...). A CS is valid at any
tuning; the tuning only sets where it is tightest. 5,000 is the default tuning of
GrowthBook's ``gbstats`` sequential test, a size typical of a small experiment."""

_METRICS = ("binary", "continuous")


class PlannedSample(NamedTuple):
    """Planned sample of one experiment, frozen at registration.

    Attributes:
        n_fixed: Fixed-horizon z-test sample for the control arm at the per-test power
            (units). NaN when not reachable.
        n_plan: Planned control-arm sample ``max(min_samples, ceil(R n_fixed / v))``;
            ``inf`` when not reachable (never NaN for a valid request shape).
        inflation: The factor R used.
        verified_share: The verified share v used.
        reachable: False when the MDE is zero/non-finite, the baseline or sd invalid,
            a binary baseline plus MDE leaves (0, 1), ``v`` is not in (0, 1], or alpha
            or power are outside (0, 1).
        reason: Empty string when reachable, else why not.
    """

    n_fixed: np.ndarray
    n_plan: np.ndarray
    inflation: np.ndarray
    verified_share: np.ndarray
    reachable: np.ndarray
    reason: np.ndarray


def per_test_power(power: ArrayLike, n_guardrails: ArrayLike = 0) -> np.ndarray:
    """Power each of the ``1 + g`` hypotheses gets so that all hold jointly.

    ``adopt`` needs the primary to be shown beneficial *and* every guardrail shown
    non-inferior. Splitting the type II error ``beta = 1 - power`` evenly (Bonferroni on
    the misses, valid without independence) gives per-test power ``1 - beta / (1 + g)``,
    so ``P(all succeed) >= power``.

    Args:
        power: Registered power in (0, 1).
        n_guardrails: Number of guardrails g (>= 0).

    Returns:
        Per-test power, same broadcast shape.
    """
    power = np.asarray(power, dtype=float)
    g = np.asarray(n_guardrails, dtype=float)
    return 1.0 - (1.0 - power) / (1.0 + np.maximum(g, 0.0))


def arm_variances(baseline_mean: ArrayLike, mde: ArrayLike, baseline_sd: ArrayLike | None, metric: str):
    """The per-unit variances a plan assumes: ``(control, treatment, valid)``; ``p (1 - p)`` at the
    baseline and at the baseline plus the MDE for a binary metric, ``sd^2`` in both arms for a
    continuous one. Raises ``ValueError`` for another ``metric``."""
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {_METRICS}, got {metric!r}")
    p = np.asarray(baseline_mean, dtype=float)
    d = np.asarray(mde, dtype=float)
    if metric == "binary":
        p2 = p + d
        var_c = p * (1.0 - p)
        var_t = p2 * (1.0 - p2)
        ok = (p > 0) & (p < 1) & (p2 > 0) & (p2 < 1)
    else:
        sd = np.asarray(np.nan if baseline_sd is None else baseline_sd, dtype=float)
        var_c = var_t = sd**2 + 0.0 * p
        ok = np.isfinite(sd) & (sd > 0)
    return var_c, var_t, ok


def n_fixed(
    baseline_mean: ArrayLike,
    mde: ArrayLike,
    alpha: ArrayLike,
    power: ArrayLike,
    allocation_ratio: ArrayLike = 1.0,
    baseline_sd: ArrayLike | None = None,
    metric: str = "binary",
) -> np.ndarray:
    """Fixed-horizon control-arm sample of a two-sided two-sample z-test.

    ``n_c = (z_{1-alpha/2} + z_{power})^2 (s_c^2 + s_t^2 / r) / mde^2`` (not rounded),
    unpooled variances at baseline and at baseline + MDE (binary) or ``sd^2``
    (continuous). For 0.50 -> 0.60, alpha 0.05, power 0.80 this is 384.6 (385 per arm;
    the pooled-null variant gives 387.3). Seed note 000's 194 is the one-sample formula
    ``(z_a sqrt(p0 q0) + z_b sqrt(p1 q1))^2 / mde^2`` = 193.9: a factor two short.

    Args:
        baseline_mean: Control mean (binary: proportion in (0, 1)).
        mde: Minimum detectable effect, absolute, signed in the registered direction
            (a decrease is negative; only its size matters for continuous metrics).
        alpha: Two-sided significance level (the experiment's alpha share).
        power: Power in (0, 1).
        allocation_ratio: Treatment-to-control ratio of units r (> 0).
        baseline_sd: Per-unit standard deviation (continuous metrics only).
        metric: ``"binary"`` or ``"continuous"``.

    Returns:
        Control-arm units (float, not rounded); NaN where the inputs make the sample
        undefined (zero/non-finite MDE, invalid baseline, sd, alpha, power or ratio).

    Raises:
        ValueError: If ``metric`` is not ``"binary"`` or ``"continuous"``.

    References:
        Chow, Shao, Wang (2008), "Sample Size Calculations in Clinical Research",
        Sec. 4.2 (two-sample test for proportions, unpooled variance).
    """
    var_c, var_t, ok = arm_variances(baseline_mean, mde, baseline_sd, metric)
    alpha = np.asarray(alpha, dtype=float)
    power = np.asarray(power, dtype=float)
    r = np.asarray(allocation_ratio, dtype=float)
    d = np.asarray(mde, dtype=float)
    ok = (
        ok & np.isfinite(d) & (d != 0) & (alpha > 0) & (alpha < 1)
        & (power > 0) & (power < 1) & np.isfinite(r) & (r > 0)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        z = stats.norm.ppf(1 - np.where(ok, alpha, 0.5) / 2) + stats.norm.ppf(
            np.where(ok, power, 0.5)
        )
        n = z**2 * (var_c + var_t / np.where(ok, r, 1.0)) / np.where(ok, d, 1.0) ** 2
    return np.where(ok, n, np.nan)


def planned_sample(
    baseline_mean: ArrayLike,
    mde: ArrayLike,
    alpha: ArrayLike,
    power: ArrayLike,
    min_samples: ArrayLike,
    allocation_ratio: ArrayLike = 1.0,
    baseline_sd: ArrayLike | None = None,
    metric: str = "binary",
    inflation: ArrayLike | None = None,
    verified_share: ArrayLike = 1.0,
) -> PlannedSample:
    """Planned control-arm sample for the confidence-sequence decision.

    ``N_plan = max(min_samples, ceil(R * n_fixed / v))`` with ``n_fixed`` from
    :func:`n_fixed`. The plan counts randomization units and takes the sd of the per-unit
    value (per-user means for a user-randomized experiment), so the design effect of DESIGN
    section 6 enters through ``baseline_sd`` (the registration sets it from the family's
    history, ``analysis.registration.unit_sd``).

    Args:
        baseline_mean: Registered control mean (binary: proportion).
        mde: Registered MDE, absolute, signed in the registered direction.
        alpha: The comparison's alpha (two-sided).
        power: Power of this one test in (0, 1); where guardrails share the type II error
            of ``adopt``, :func:`per_test_power` of the registered power.
        min_samples: Declared minimum units per arm.
        allocation_ratio: Treatment-to-control ratio of units.
        baseline_sd: Per-unit sd (continuous metrics).
        metric: ``"binary"`` or ``"continuous"``.
        inflation: R, the CS inflation (default: :func:`inflation_at` the comparison's
            ``alpha`` and ``power``).
        verified_share: Expected share v in (0, 1] of outcomes that are verified.

    Returns:
        A :class:`PlannedSample`; unreachable requests carry ``reachable=False``,
        ``n_plan=inf`` and a reason.

    Raises:
        ValueError: If ``metric`` is not ``"binary"`` or ``"continuous"``.
    """
    base = np.asarray(baseline_mean, dtype=float)
    d = np.asarray(mde, dtype=float)
    a = np.asarray(alpha, dtype=float)
    pw = np.asarray(power, dtype=float)
    v = np.asarray(verified_share, dtype=float)
    rr = np.asarray(inflation_at(a, pw) if inflation is None else inflation, dtype=float)
    ms = np.asarray(min_samples, dtype=float)
    nf = n_fixed(base, d, a, pw, allocation_ratio, baseline_sd, metric)
    shape = np.broadcast_shapes(nf.shape, v.shape, rr.shape, ms.shape)
    reason = np.full(shape, "", dtype=object)

    def mark(cond, text):
        cond = np.broadcast_to(cond, shape)
        reason[(reason == "") & cond] = text

    mark(~(np.isfinite(d) & (d != 0)), "MDE is zero or not finite")
    mark(~((a > 0) & (a < 1)), "alpha not in (0, 1)")
    mark(~((pw > 0) & (pw < 1)), "power not in (0, 1)")
    mark(~(np.isfinite(v) & (v > 0) & (v <= 1)), "verified share not in (0, 1]")
    mark(~(np.isfinite(rr) & (rr > 0)), "inflation not positive and finite")
    if metric == "binary":
        mark(~((base > 0) & (base < 1)), "baseline proportion not in (0, 1)")
        mark(~((base + d > 0) & (base + d < 1)), "baseline plus MDE not in (0, 1)")
    else:
        sd = np.asarray(np.nan if baseline_sd is None else baseline_sd, dtype=float)
        mark(~(np.isfinite(sd) & (sd > 0)), "baseline sd missing or not positive")
    mark(~np.isfinite(nf), "sample size undefined (allocation ratio?)")
    reachable = reason == ""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        raw = np.ceil(rr * nf / v - 1e-9)
        n_plan = np.fmax(np.where(np.isfinite(ms), ms, 0.0), raw)
    n_plan = np.where(reachable, n_plan, np.inf)
    return PlannedSample(
        n_fixed=np.broadcast_to(np.where(reachable, nf, np.nan), shape).copy(),
        n_plan=np.broadcast_to(n_plan, shape).astype(float),
        inflation=np.broadcast_to(rr, shape).astype(float),
        verified_share=np.broadcast_to(v, shape).astype(float),
        reachable=np.broadcast_to(reachable, shape).copy(),
        reason=reason,
    )


def power_at(
    n_per_arm: ArrayLike,
    mde: ArrayLike,
    baseline_mean: ArrayLike,
    alpha: ArrayLike,
    allocation_ratio: ArrayLike = 1.0,
    baseline_sd: ArrayLike | None = None,
    metric: str = "binary",
    inflation: ArrayLike | None = None,
    verified_share: ArrayLike = 1.0,
) -> np.ndarray:
    """Power reached for the registered MDE at a control-arm sample (never the observed effect).

    The z-test power at the effective sample ``n v / R``:
    ``Phi(|mde|/se - z_{1-alpha/2}) + Phi(-|mde|/se - z_{1-alpha/2})``. With the plan's
    R this approximates the CS's power to adopt by ``n`` when the CS is tuned at ``n``
    (exact at the calibrated power); pass ``inflation=1`` for the fixed-horizon z-test
    power.

    Args:
        n_per_arm: Control-arm units (>= 0).
        mde: Registered MDE (absolute, signed in the registered direction).
        baseline_mean: Control mean.
        alpha: Two-sided level.
        allocation_ratio: Treatment-to-control ratio.
        baseline_sd: Per-unit sd (continuous).
        metric: ``"binary"`` or ``"continuous"``.
        inflation: R (1 for the fixed-horizon test; default: the R of a plan at ``alpha``
            and power 0.8, :func:`inflation_at`).
        verified_share: v.

    Returns:
        Power in [0, 1]; 0 when ``n`` is 0; NaN when the inputs are invalid.

    Raises:
        ValueError: If ``metric`` is unknown.
    """
    var_c, var_t, ok = arm_variances(baseline_mean, mde, baseline_sd, metric)
    d = np.abs(np.asarray(mde, dtype=float))
    a = np.asarray(alpha, dtype=float)
    r = np.asarray(allocation_ratio, dtype=float)
    rr = inflation_at(a, 0.8) if inflation is None else np.asarray(inflation, float)
    n_eff = np.asarray(n_per_arm, dtype=float) * np.asarray(verified_share, float) / rr
    ok = ok & np.isfinite(d) & (a > 0) & (a < 1) & (r > 0) & (n_eff >= 0) & ~np.isnan(n_eff)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((var_c + var_t / r) / n_eff)
        z = stats.norm.ppf(1 - a / 2)
        pw = stats.norm.cdf(d / se - z) + stats.norm.cdf(-d / se - z)
        pw = np.where(n_eff == 0, 0.0, pw)
    return np.where(ok, pw, np.nan)


def mde_reachable(
    n_per_arm: float,
    baseline_mean: float,
    alpha: float,
    power: float,
    inflation: float,
    verified_share: float = 1.0,
    baseline_sd: float | None = None,
    metric: str = "binary",
) -> float:
    """The smallest MDE (an increase) whose plan fits ``n_per_arm`` control units at equal allocation.

    The inverse of :func:`planned_sample` in the MDE: the root in ``d`` of
    ``power_at(n, d, ...) = power`` (at the plan's R and verified share, power at ``n`` is the
    z-test power at ``n_fixed = n v / R``, so the root's plan is ``n``), by Brent's method
    (``scipy.optimize.brentq``) between 0 and the largest MDE the metric allows (a rate: up
    to ``1 - baseline``; a mean: 100 sd).

    Returns:
        The MDE in the metric's unit; NaN when no MDE is reachable (``n`` is 0, the largest
        MDE is not reached, or the inputs are invalid).
    """
    if metric == "binary":
        high = 1.0 - float(baseline_mean) - 1e-9
    else:
        high = 100.0 * float(np.nan if baseline_sd is None else baseline_sd)

    def gap(d: float) -> float:
        return float(power_at(n_per_arm, d, baseline_mean, alpha, baseline_sd=baseline_sd, metric=metric,
                              inflation=inflation, verified_share=verified_share)) - power

    if not (np.isfinite(high) and high > 0 and n_per_arm > 0) or not gap(high) > 0:
        return float("nan")
    return float(optimize.brentq(gap, high * 1e-9, high, xtol=1e-12, rtol=1e-10))
