"""Power and feasibility for the test that decides: planned sample and power reached.

The decision is made by a confidence sequence (CS, see ``sequential``), looked at every
night. Its power at a given sample is lower than a fixed-horizon z-test's, so the
planned sample inflates the z-test sample by a factor ``R`` calibrated by simulation
(``benchmarks/calibrate_cs_inflation.py``) and by ``1 / v`` for the expected share ``v``
of outcomes that are verified:

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
from scipy import stats

__all__ = ["FALLBACK_TUNING_UNITS", "R_DEFAULT", "PlannedSample", "n_fixed", "planned_sample", "power_at", "per_test_power"]

# Inflation of the fixed-horizon z-test sample that keeps the registered power at N_plan
# for the CS decision. Calibrated by benchmarks/calibrate_cs_inflation.py (400 000
# Brownian paths per setting, seed 20261129): CS tuned at N_plan, 30 evenly spaced nightly
# looks up to N_plan, no decision before look 7 (the 7-day burn-in), adopt = CS lower
# bound > 0 at some look. Critical R (power quantile of the per-path critical R, with
# order-statistic Monte Carlo s.e.):
#   alpha 0.050, power 0.80: 1.7232 (s.e. 0.0022)   alpha 0.050, power 0.90: 1.6215 (0.0023)
#   alpha 0.025, power 0.80: 1.6320 (s.e. 0.0019)   alpha 0.025, power 0.90: 1.5525 (0.0021)
# R_DEFAULT is the largest, rounded up past its upper 95% MC bound (1.7277), so the
# registered power holds in all four settings (it is conservative for the others).
# Fewer looks need more (10 looks: 1.79; a single look at N_plan: 1.91).
R_DEFAULT: float = 1.73

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


def _arm_variances(baseline_mean, mde, baseline_sd, metric):
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
    var_c, var_t, ok = _arm_variances(baseline_mean, mde, baseline_sd, metric)
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
    inflation: ArrayLike = R_DEFAULT,
    verified_share: ArrayLike = 1.0,
) -> PlannedSample:
    """Planned control-arm sample for the confidence-sequence decision.

    ``N_plan = max(min_samples, ceil(R * n_fixed / v))`` with ``n_fixed`` from
    :func:`n_fixed`. The design effect of DESIGN section 6 is 1: the plan counts
    randomization units and takes the sd of the per-unit value (per-user means for a
    user-randomized experiment), which already carries the clustering.

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
        inflation: R, the CS inflation (default :data:`R_DEFAULT`).
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
    rr = np.asarray(inflation, dtype=float)
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
    inflation: ArrayLike = R_DEFAULT,
    verified_share: ArrayLike = 1.0,
) -> np.ndarray:
    """Power reached for the registered MDE at a control-arm sample (never the observed effect).

    The z-test power at the effective sample ``n v / R``:
    ``Phi(|mde|/se - z_{1-alpha/2}) + Phi(-|mde|/se - z_{1-alpha/2})``. With the default
    R this approximates the CS's power to adopt by ``n`` when the CS is tuned at ``n``
    (exact at the calibration settings); pass ``inflation=1`` for the fixed-horizon
    z-test power.

    Args:
        n_per_arm: Control-arm units (>= 0).
        mde: Registered MDE (absolute, signed in the registered direction).
        baseline_mean: Control mean.
        alpha: Two-sided level.
        allocation_ratio: Treatment-to-control ratio.
        baseline_sd: Per-unit sd (continuous).
        metric: ``"binary"`` or ``"continuous"``.
        inflation: R (1 for the fixed-horizon test).
        verified_share: v.

    Returns:
        Power in [0, 1]; 0 when ``n`` is 0; NaN when the inputs are invalid.

    Raises:
        ValueError: If ``metric`` is unknown.
    """
    var_c, var_t, ok = _arm_variances(baseline_mean, mde, baseline_sd, metric)
    d = np.abs(np.asarray(mde, dtype=float))
    a = np.asarray(alpha, dtype=float)
    r = np.asarray(allocation_ratio, dtype=float)
    n_eff = np.asarray(n_per_arm, dtype=float) * np.asarray(verified_share, float) / np.asarray(inflation, float)
    ok = ok & np.isfinite(d) & (a > 0) & (a < 1) & (r > 0) & (n_eff >= 0) & ~np.isnan(n_eff)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((var_c + var_t / r) / n_eff)
        z = stats.norm.ppf(1 - a / 2)
        pw = stats.norm.cdf(d / se - z) + stats.norm.cdf(-d / se - z)
        pw = np.where(n_eff == 0, 0.0, pw)
    return np.where(ok, pw, np.nan)
