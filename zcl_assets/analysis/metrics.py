"""Metrics as one concept: the catalogue of metric names and the registry of metric kinds.

A *metric* (``success``, ``time_minutes``, ...) is a named value an outcome carries: the
catalogue says whether it is binary or continuous, which direction is good by default,
which registered cap applies and at what resolution it is accumulated exactly. Whether a
metric counts successes is the catalogue's answer (:func:`counts_successes`): burn-in then
needs successes and failures in every arm, and a report reads an arm by its successes,
also when a user's sessions are averaged. A *metric kind* is what the analysis does with
it: its estimand, sufficient statistics, descriptive test and interval, the per-unit
variance the confidence sequence uses, the range the difference lies in (the CS is clipped
to it) and the power formula of its plan. Adding a kind is one entry of :data:`KINDS`;
nothing outside this module asks "is it binary".

Estimands (DESIGN section 6):

* ``binary_proportion``: difference of the proportions of units with success, one
  observation per unit (session-randomized, or user-randomized with one session a user).
* ``continuous_mean``: difference of the means of the unit values. A unit's value is its
  session's value, or, for a user-randomized experiment with several sessions a user, the
  mean of the user's session values (the **per-user mean**, the primary estimand there:
  every user weighs the same).
* ``ratio_of_sums``: the session-weighted mean ``sum over users of Y_u / sum of M_u`` of a
  user-randomized experiment, with the delta-method variance (Deng, Lu and Litz 2018);
  reported beside the per-user mean, labelled secondary, never deciding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
import polars as pl

from zcl_assets.stats._validate import guard_variance
from zcl_assets.stats.binary import fisher_exact, miettinen_nurminen
from zcl_assets.stats.clustering import delta_method_difference, delta_method_mean
from zcl_assets.stats.continuous import welch

DESCRIPTIVE_ALPHA = 0.05
"""Level of every fixed-horizon (descriptive) interval and of the disagreement flag."""

SMALL_TABLE_EXPECTED = 5.0
"""A 2x2 table with an expected cell below this is small: Fisher's exact test is reported
beside the score test (DESIGN section 2, lesson 4)."""

MEAN_SCALE = 1_000_000
"""Per-unit means are accumulated as exact integers at ``resolution / MEAN_SCALE``."""


@dataclass(frozen=True)
class MetricSpec:
    """One metric name of the catalogue.

    Attributes:
        name: The metric as outcomes and registrations name it.
        binary: True for a 0/1 metric.
        direction: The beneficial direction when nothing else is registered.
        cap: The key of ``metric_caps`` in a registration that caps it (None: uncapped).
        resolution: Smallest step of the value accumulated exactly (values are rounded to
            it once, before any sum; sums are exact integers, so a rerun is bit-identical).
    """

    name: str
    binary: bool
    direction: str
    cap: str | None
    resolution: float


CATALOGUE: dict[str, MetricSpec] = {
    m.name: m
    for m in (
        MetricSpec("success", binary=True, direction="increase", cap=None, resolution=1.0),
        MetricSpec("time_minutes", binary=False, direction="decrease", cap="time_minutes", resolution=1e-3),
        MetricSpec("tokens", binary=False, direction="decrease", cap="tokens", resolution=1.0),
        MetricSpec("score", binary=False, direction="increase", cap=None, resolution=1e-6),
    )
}

BINARY_METRICS: tuple[str, ...] = tuple(name for name, spec in CATALOGUE.items() if spec.binary)
"""The catalogue's binary metrics (one success per observation)."""


def metric_spec(name: str) -> MetricSpec:
    """The catalogue entry of ``name``; names from aggregate exports (``metric_2``) are
    continuous, increase, uncapped, resolution 1e-6."""
    return CATALOGUE.get(name) or MetricSpec(name, binary=False, direction="increase", cap=None, resolution=1e-6)


class ArmStats(NamedTuple):
    """Sufficient statistics of one arm at one look, arrays of one shape.

    Attributes:
        n: Analysed units.
        mean: Mean of the unit values (binary: proportion of units with success; ratio
            kind: session-weighted mean).
        m2: Sum of squared deviations of the unit values from their mean (NaN if unknown).
        variance: Exported sample variance (aggregate sources), NaN when computed from m2.
        successes: Observations with success (binary metrics), NaN otherwise.
        observations: Observations (sessions) behind the units.
        sum_y: Ratio kind: sum over users of the metric summed over their sessions.
        sum_m: Ratio kind: sum over users of their session counts.
        c_yy: Ratio kind: centered sum of squares of per-user sums ``Y_u``.
        c_mm: Ratio kind: centered sum of squares of per-user counts ``M_u``.
        c_ym: Ratio kind: centered cross-product of ``Y_u`` and ``M_u``.
    """

    n: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    variance: np.ndarray
    successes: np.ndarray
    observations: np.ndarray
    sum_y: np.ndarray
    sum_m: np.ndarray
    c_yy: np.ndarray
    c_mm: np.ndarray
    c_ym: np.ndarray

    def sample_variance(self) -> np.ndarray:
        """Sample variance (divisor n - 1) of the unit values, float noise set to 0."""
        with np.errstate(invalid="ignore", divide="ignore"):
            computed = np.where(self.n >= 2, self.m2 / (self.n - 1.0), np.nan)
        return guard_variance(np.where(np.isnan(self.variance), computed, self.variance), self.mean)


class Descriptive(NamedTuple):
    """Fixed-horizon figures of one comparison (labelled descriptive; they never decide)."""

    diff: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    p_value: np.ndarray
    ci_method: np.ndarray
    p_method: np.ndarray
    fisher_p: np.ndarray
    fisher_or: np.ndarray
    fisher_or_low: np.ndarray
    fisher_or_high: np.ndarray


def _binary_variance(arm: ArmStats) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        p = arm.mean
        return np.where(arm.n > 0, p * (1.0 - p), np.nan)


def _binary_describe(t: ArmStats, c: ArmStats) -> Descriptive:
    size = t.n.shape
    ok = (t.n > 0) & (c.n > 0) & np.isfinite(t.mean) & np.isfinite(c.mean)
    x_t = np.where(ok, np.round(t.mean * t.n), 0.0)
    x_c = np.where(ok, np.round(c.mean * c.n), 0.0)
    n_t, n_c = np.where(ok, t.n, 1.0), np.where(ok, c.n, 1.0)
    mn = miettinen_nurminen(x_t, n_t, x_c, n_c, alpha=DESCRIPTIVE_ALPHA)
    nan = np.full(size, np.nan)
    fisher = [nan.copy() for _ in range(4)]
    total = n_t + n_c
    successes = x_t + x_c
    with np.errstate(invalid="ignore", divide="ignore"):
        min_expected = np.minimum(np.minimum(n_t, n_c) * np.minimum(successes, total - successes) / total, np.inf)
    small = ok & (min_expected < SMALL_TABLE_EXPECTED)
    if small.any():
        res = fisher_exact(x_t[small], n_t[small], x_c[small], n_c[small], alpha=DESCRIPTIVE_ALPHA)
        for target, value in zip(fisher, res):
            target[small] = value
    method = np.where(ok, "miettinen_nurminen_score", None).astype(object)
    return Descriptive(
        np.where(ok, mn.diff, np.nan), np.where(ok, mn.ci_low, np.nan), np.where(ok, mn.ci_high, np.nan),
        np.where(ok, mn.pvalue, np.nan), method, method.copy(), *fisher,
    )


def _mean_variance(arm: ArmStats) -> np.ndarray:
    return arm.sample_variance()


def _normal_figures(res, size: tuple[int, ...], ci_method: str, p_method: str) -> Descriptive:
    """A test result with ``diff, ci_low, ci_high, pvalue`` as :class:`Descriptive` (no Fisher figures)."""
    nan = np.full(size, np.nan)
    return Descriptive(np.asarray(res.diff, float).reshape(size), np.asarray(res.ci_low, float).reshape(size),
                       np.asarray(res.ci_high, float).reshape(size), np.asarray(res.pvalue, float).reshape(size),  # pragma: no mutate
                       np.full(size, ci_method, dtype=object), np.full(size, p_method, dtype=object),
                       nan, nan.copy(), nan.copy(), nan.copy())


def _mean_describe(t: ArmStats, c: ArmStats) -> Descriptive:
    res = welch(t.n, t.mean, t.sample_variance(), c.n, c.mean, c.sample_variance(), alpha=DESCRIPTIVE_ALPHA)
    return _normal_figures(res, t.n.shape, "welch_t", "welch_t")


def _ratio_mean(arm: ArmStats):
    """Delta-method mean of a ratio of per-user sums from centered moments."""
    n = arm.n
    with np.errstate(invalid="ignore", divide="ignore"):
        mu_y, mu_m = arm.sum_y / n, arm.sum_m / n
        sum_y2 = arm.c_yy + n * mu_y**2
        sum_m2 = arm.c_mm + n * mu_m**2
        sum_ym = arm.c_ym + n * mu_y * mu_m
    return delta_method_mean(np.nan_to_num(n), np.nan_to_num(arm.sum_y), np.maximum(np.nan_to_num(sum_y2), 0.0),
                             np.nan_to_num(arm.sum_m), np.maximum(np.nan_to_num(sum_m2), 0.0), np.nan_to_num(sum_ym))


def _ratio_variance(arm: ArmStats) -> np.ndarray:
    r = _ratio_mean(arm)
    return np.asarray(r.variance, float) * np.asarray(arm.n, float)


def _ratio_describe(t: ArmStats, c: ArmStats) -> Descriptive:
    res = delta_method_difference(_ratio_mean(t), _ratio_mean(c), alpha=DESCRIPTIVE_ALPHA)
    return _normal_figures(res, t.n.shape, "delta_method_per_user_sums", "delta_method_z")


@dataclass(frozen=True)
class MetricKind:
    """How the analysis treats one kind of metric (see the module docstring).

    Attributes:
        name: The stored label.
        estimand: The difference estimated, in words (stored with every comparison).
        sufficient_statistics: The per-arm figures the look needs.
        descriptive: The fixed-horizon test and interval, in words.
        cs_variance: The per-unit variance of an arm that the confidence sequence uses.
        plan: The planned-sample formula, in words.
        power_formula: The ``metric`` of ``stats.power`` that plans it and gives its power
            reached (``"binary"``: unpooled p (1 - p) at baseline and baseline + MDE;
            ``"continuous"``: the registered sd of the unit value); None for a kind that
            never decides (nothing is planned for it).
        clip: Range the difference lies in (binary: [-1, 1]); the CS is clipped to it.
        arm_variance: ``ArmStats -> per-unit variance`` for the CS.
        describe: ``(treatment, control) -> Descriptive``.
    """

    name: str
    estimand: str
    sufficient_statistics: tuple[str, ...]
    descriptive: str
    cs_variance: str
    plan: str
    power_formula: str | None
    clip: tuple[float, float] | None
    arm_variance: Callable[[ArmStats], np.ndarray]
    describe: Callable[[ArmStats, ArmStats], Descriptive]


BINARY_PROPORTION = MetricKind(
    name="binary_proportion",
    estimand="difference in proportions of units with success (treatment - control)",
    sufficient_statistics=("n", "successes"),
    descriptive="Miettinen-Nurminen score test and its interval; Fisher's exact p and conditional "
                "odds-ratio interval beside them when an expected cell is below 5",
    cs_variance="p (1 - p) per arm",
    plan="two-sample z-test, unpooled p (1 - p) at baseline and baseline + MDE",
    power_formula="binary",
    clip=(-1.0, 1.0),
    arm_variance=_binary_variance,
    describe=_binary_describe,
)
CONTINUOUS_MEAN = MetricKind(
    name="continuous_mean",
    estimand="difference in means of the unit values (per-user means when a user has several sessions)",
    sufficient_statistics=("n", "sum", "centered sum of squares"),
    descriptive="Welch t-test and interval",
    cs_variance="sample variance of the unit values",
    plan="two-sample z-test at the registered sd of the unit value (binary per-user means: p (1 - p))",
    power_formula="continuous",
    clip=None,
    arm_variance=_mean_variance,
    describe=_mean_describe,
)
RATIO_OF_SUMS = MetricKind(
    name="ratio_of_sums",
    estimand="difference in session-weighted means, ratio of per-user sums (secondary, beside the per-user mean)",
    sufficient_statistics=("users", "sum Y_u", "sum M_u", "centered (co)variances of Y_u and M_u"),
    descriptive="delta method on per-user sums (Deng, Lu and Litz 2018), normal interval",
    cs_variance="users times the delta-method variance of the ratio",
    plan="not planned: it is reported beside the per-user mean, which decides",
    power_formula=None,
    clip=None,
    arm_variance=_ratio_variance,
    describe=_ratio_describe,
)

KINDS: dict[str, MetricKind] = {k.name: k for k in (BINARY_PROPORTION, CONTINUOUS_MEAN, RATIO_OF_SUMS)}


def kind_estimand(kind: pl.Expr) -> pl.Expr:
    """The estimand in words of each row's metric kind (String expression over kind names)."""
    return kind.replace_strict({name: k.estimand for name, k in KINDS.items()}, default=None, return_dtype=pl.String)


def counts_successes(metric: pl.Expr) -> pl.Expr:
    """Per row: the metric counts successes (a binary metric of the catalogue, also when a
    user's sessions are averaged), so burn-in needs successes and failures in every arm
    (Boolean expression over metric names)."""
    return metric.is_in(BINARY_METRICS)


def several_sessions_a_unit(aggregate_export: pl.Expr) -> pl.Expr:
    """Per row of a registration frame: each unit is a user with several sessions, so a unit's
    figure is the mean over its sessions.

    Reads the columns ``randomization_unit`` and ``sessions_per_unit``. ``aggregate_export``
    (Boolean expression) marks experiments read from an aggregate export (arm snapshots): their
    counts are already one figure per unit, whatever the registration says of sessions.
    """
    return (pl.col("randomization_unit") == "user") & (pl.col("sessions_per_unit") != "one") & ~aggregate_export


def primary_kind_column(metric: pl.Expr, several: pl.Expr) -> pl.Expr:
    """The name of the kind of each row's metric as a primary estimand (String expression).

    A binary metric observed once per unit is a proportion; everything else (continuous
    metrics, and binary metrics averaged over a user's several sessions, ``several``) is a
    mean of unit values. The plan (``registration.plan_registrations``) and the comparisons
    (``design.comparisons``) both take the kind from here.

    Examples:
        >>> designs = pl.DataFrame({"metric": ["success", "success", "success", "tokens"],
        ...                         "randomization_unit": ["session", "user", "user", "session"],
        ...                         "sessions_per_unit": ["many", "many", "many", "many"],
        ...                         "aggregate_export": [False, False, True, False]})
        >>> several = several_sessions_a_unit(pl.col("aggregate_export"))
        >>> designs.select(primary_kind_column(pl.col("metric"), several)).to_series().to_list()
        ['binary_proportion', 'continuous_mean', 'binary_proportion', 'continuous_mean']
    """
    binary = metric.is_in(BINARY_METRICS)
    return pl.when(binary & ~several).then(pl.lit(BINARY_PROPORTION.name)).otherwise(pl.lit(CONTINUOUS_MEAN.name))

