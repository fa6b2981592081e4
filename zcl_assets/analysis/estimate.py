"""The first steps of the look: from cumulative arm statistics to one estimate per comparison and night.

* :func:`rows`: the design x the output nights x the strata of each experiment;
* :func:`arm_statistics`: both arms' cumulative sufficient statistics at each row's night
  (an as-of search, no loop);
* :func:`strata`: each stratum's difference adjusted for the units' pre-experiment covariate
  where the experiment has one (CUPED, ``stats.cuped``), the strata combined into one estimate
  weighted by their units (so a declared allocation change cannot confound it, Simpson), and
  the arms pooled over them;
* :func:`nights`: the positions of each comparison at each night (one row of the table);
* :func:`descriptive`: the fixed-horizon figures per metric kind, the relative lift on the
  stratified estimate and the flag where an interval and its test disagree.

Each step takes and returns a small typed value; ``engine.analyse`` chains them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl
from scipy import stats as sps

from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.metrics import DESCRIPTIVE_ALPHA, KINDS, ArmStats, Descriptive
from zcl_assets.stats.cuped import Moments, adjust
from zcl_assets.stats.lift import LiftResult, relative_lift

STAT_COLUMNS = ("n", "sum_v", "m2_v", "variance", "successes", "observations", "sum_y", "sum_m", "c_yy", "c_mm", "c_ym")
"""The cumulative sufficient statistics of an arm (``LookInputs.arm_stats``)."""

COVARIATE_COLUMNS = ("sum_x", "sum_h", "m2_x", "m2_h", "c_xh", "c_xv", "c_hv")
"""The CUPED covariate's sums of an arm: ``x`` (the unit's pre-experiment mean, 0 without one)
and ``h`` (it has one), their centered sums and cross-products with the unit value
(``sql/select_arm_statistics.sql``); all 0 where no unit has a covariate (absent: 0)."""

CUPED_METHOD = "cuped_normal"
"""The descriptive method named where the covariate adjusted the difference: the normal test
and interval of the adjusted difference (Deng, Xu, Kohavi, Walker 2013)."""


class Rows(NamedTuple):
    """One row per comparison, output night and stratum, sorted by comparison, night, stratum.

    Attributes:
        design: the comparisons (``design.COLUMNS``), sorted so that row ``cid`` is comparison ``cid``.
        as_of: the night of each row.
        cid, e, d, segment: comparison, experiment position, night position and stratum.
        metric, treatment, control: positions of the metric and the two arms in the experiment.
        kinds: the metric kind of each row.
    """

    design: pl.DataFrame
    as_of: pl.Series
    cid: np.ndarray
    e: np.ndarray
    d: np.ndarray
    segment: np.ndarray
    metric: np.ndarray
    treatment: np.ndarray
    control: np.ndarray
    kinds: np.ndarray


def rows(comparisons: pl.DataFrame, looks: pl.DataFrame, segments: pl.DataFrame, grid: Grid) -> Rows:
    """The rows of the look: every comparison at every night of its experiment (the decision
    at a night reads the looks before it), once per stratum of the night's epoch: only units
    first assigned in the current epoch (after its ``reopened`` event) enter the estimate."""
    design = comparisons.sort("cid")
    frame = design.select("cid", "experiment_id").join(looks.select("experiment_id", "as_of", "epoch"), on="experiment_id")
    frame = frame.join(segments.select("experiment_id", "segment", "epoch"), on=["experiment_id", "epoch"]) \
        .drop("epoch").sort("cid", "as_of", "segment")
    cid = frame.get_column("cid").to_numpy()
    e = grid.e(frame.get_column("experiment_id"))
    return Rows(
        design=design, as_of=frame.get_column("as_of"), cid=cid, e=e, d=grid.d(frame.get_column("as_of")),
        segment=frame.get_column("segment").to_numpy(),
        metric=grid.metric(e, design.get_column("metric").gather(cid)),
        treatment=grid.arm(e, design.get_column("treatment_arm").gather(cid)),
        control=grid.arm(e, design.get_column("control_arm").gather(cid)),
        kinds=design.get_column("metric_kind").to_numpy()[cid],
    )


class _Lookup:
    """As-of search of cumulative rows: the last row of a key with ``day <= night``.

    Rows before the first night count from night 0 (the latest of them wins), rows after the
    last night are never found; the rows may come in any order.
    """

    def __init__(self, keys: np.ndarray, days: np.ndarray, nights: int):
        self.span = nights + 2
        combined = keys * self.span + np.clip(days, -1, nights) + 1
        self.order = np.lexsort((days, combined))  # ties (rows before the first night): by day
        self.sorted = combined[self.order]

    def __call__(self, keys: np.ndarray, nights: np.ndarray) -> np.ndarray:
        """Row index per query, -1 when the key has no row yet."""
        if self.sorted.size == 0:
            return np.full(keys.shape, -1, dtype=np.int64)
        q = keys * self.span + nights + 1
        i = np.searchsorted(self.sorted, q, side="right") - 1
        ok = (i >= 0) & (self.sorted[np.maximum(i, 0)] // self.span == keys)
        return np.where(ok, self.order[np.maximum(i, 0)], -1)


class StratumStats(NamedTuple):
    """Both arms' cumulative sufficient statistics (:data:`STAT_COLUMNS`) at every row of
    :class:`Rows`; NaN where the arm has no figures yet."""

    treatment: dict[str, np.ndarray]
    control: dict[str, np.ndarray]


def arm_statistics(arm_stats: pl.DataFrame, grid: Grid, at: Rows) -> StratumStats:
    """The statistics of each row's arms at its night: the last row of the arm, metric and
    stratum on or before the night (``arm_stats`` has rows only on days they changed)."""
    st = arm_stats
    se_ = grid.e(st.get_column("experiment_id"))
    n_seg, n_arm, n_met = grid.segment_epoch.shape[1], grid.max_arms, grid.n_metrics

    def key(e_, m_, j_, s_):
        return ((e_ * n_met + m_) * n_arm + j_) * n_seg + s_

    sm = grid.metric(se_, st.get_column("metric"))
    sj = grid.arm(se_, st.get_column("arm"))
    skey = np.where((sm >= 0) & (sj >= 0), key(se_, sm, sj, st.get_column("segment").to_numpy()), -1)
    lookup = _Lookup(skey, grid.d(st.get_column("day")), grid.nights)
    columns = {c: st.get_column(c).cast(pl.Float64).to_numpy() for c in STAT_COLUMNS}
    columns.update({c: (st.get_column(c).cast(pl.Float64).fill_null(0.0).to_numpy() if c in st.columns
                        else np.zeros(st.height)) for c in COVARIATE_COLUMNS})

    def gather(j):
        i = lookup(np.where((at.metric >= 0) & (j >= 0), key(at.e, at.metric, j, at.segment), -2), at.d)
        if not st.height:  # no figures at all yet
            return {c: np.full(i.shape, np.nan) for c in columns}
        return {c: np.where(i >= 0, v[np.maximum(i, 0)], np.nan) for c, v in columns.items()}

    return StratumStats(gather(at.treatment), gather(at.control))


def _arm_stats(values: dict[str, np.ndarray]) -> tuple[ArmStats, np.ndarray]:
    """:class:`ArmStats` of the raw statistics, and the ratio kind's mean (its sums' ratio)."""
    n = np.nan_to_num(values["n"])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, values["sum_v"] / np.where(n > 0, n, 1), np.nan)
        ratio_mean = values["sum_y"] / values["sum_m"]
    arm = ArmStats(n=n, mean=mean, m2=values["m2_v"], variance=values["variance"], successes=values["successes"],
                   observations=values["observations"], sum_y=values["sum_y"], sum_m=values["sum_m"],
                   c_yy=values["c_yy"], c_mm=values["c_mm"], c_ym=values["c_ym"])
    return arm, ratio_mean


def _kind_stats(kinds: np.ndarray, arm: ArmStats, ratio_mean: np.ndarray):
    """Per-row mean and CS variance of an arm, by the row's metric kind."""
    mean = arm.mean.copy()
    var = np.full(arm.n.shape, np.nan)
    for name, spec in KINDS.items():
        i = kinds == name
        if not i.any():
            continue
        if name == "ratio_of_sums":  # its variance is read from the sums, never from the mean
            mean[i] = ratio_mean[i]
        var[i] = spec.arm_variance(ArmStats(*(f[i] for f in arm)))
    return mean, var


def _group_starts(*keys: np.ndarray) -> np.ndarray:
    """Index of the first row of each run of equal keys (rows sorted by the keys)."""
    n = keys[0].size
    start = np.zeros(n, dtype=bool)
    if n:
        start[0] = True
        for k in keys:
            start[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(start)


def _pool(values: dict[str, np.ndarray], first: np.ndarray, group: np.ndarray) -> dict[str, np.ndarray]:
    """Arm statistics pooled over strata: sums add; centered sums by Chan, Golub and LeVeque (1979)."""
    z = {k: np.nan_to_num(v) for k, v in values.items()}
    n = z["n"]
    n_sum, s_v, succ, obs, s_y, s_m = (np.add.reduceat(z[k], first) for k in
                                       ("n", "sum_v", "successes", "observations", "sum_y", "sum_m"))
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(n > 0, n, 1)
        # a stratum-less group (n_sum = 0) has sums 0, so its mean is 0 (and weighs n = 0 below)
        mean_v, mean_y, mean_m = (s / np.where(n_sum > 0, n_sum, 1) for s in (s_v, s_y, s_m))
        dv = np.where(n > 0, z["sum_v"] / safe, 0.0) - mean_v[group]
        dy = np.where(n > 0, z["sum_y"] / safe, 0.0) - mean_y[group]
        dm = np.where(n > 0, z["sum_m"] / safe, 0.0) - mean_m[group]
    m2, cyy, cmm, cym = (np.add.reduceat(v, first) for v in
                         (z["m2_v"] + n * dv**2, z["c_yy"] + n * dy**2, z["c_mm"] + n * dm**2, z["c_ym"] + n * dy * dm))
    nan_m2 = np.isnan(values["m2_v"])
    m2 = np.where(np.add.reduceat(nan_m2 & (n > 0), first) > 0, np.nan, m2)
    successes = np.where(np.add.reduceat(np.isnan(values["successes"]) & (n > 0), first) > 0, np.nan, succ)
    ratio_nan = np.add.reduceat(np.isnan(values["sum_y"]) & (n > 0), first) > 0
    return {"n": n_sum, "sum_v": s_v, "m2_v": m2, "variance": values["variance"][first], "successes": successes,
            "observations": obs, "sum_y": np.where(ratio_nan, np.nan, s_y), "sum_m": np.where(ratio_nan, np.nan, s_m),
            "c_yy": cyy, "c_mm": cmm, "c_ym": cym}


class Estimate(NamedTuple):
    """One comparison at one night: the strata combined, and its arms pooled over them.

    Attributes:
        first: the first row (of :class:`Rows`) of each comparison and night.
        diff: the difference, strata weighted by their units (NaN when no stratum has both arms).
        se2: its squared standard error (NaN when a stratum's variance is undefined).
        n_total: units of both arms, every stratum.
        periods: strata with units in both arms.
        treatment, control: the arms pooled over strata.
        mean_t, var_t, mean_c, var_c: each pooled arm's mean and CS variance by its kind.
        strat_t, strat_c: each arm's stratified mean, the strata weighted as in ``diff``
            (``diff = strat_t - strat_c``); the relative lift is read on them.
        strat_se2_t, strat_se2_c: their squared standard errors (sum of ``w^2 var / n``).
        cuped: the covariate adjusted some stratum of the comparison at that night.
        variance_reduction: ``1 - se2 / se2 unadjusted`` where ``cuped`` (NaN elsewhere).
    """

    first: np.ndarray
    diff: np.ndarray
    se2: np.ndarray
    n_total: np.ndarray
    periods: np.ndarray
    treatment: ArmStats
    control: ArmStats
    mean_t: np.ndarray
    var_t: np.ndarray
    mean_c: np.ndarray
    var_c: np.ndarray
    strat_t: np.ndarray
    strat_c: np.ndarray
    strat_se2_t: np.ndarray
    strat_se2_c: np.ndarray
    cuped: np.ndarray
    variance_reduction: np.ndarray


def _moments(values: dict[str, np.ndarray], mean: np.ndarray) -> Moments:
    """The CUPED sums of one arm at every row (``mean``: the unit values' mean; a covariate sum
    that is absent counts as 0)."""
    n = np.nan_to_num(values["n"])
    z = {c: values.get(c, np.zeros(n.shape)) for c in COVARIATE_COLUMNS}
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.where(n > 0, n, 1)
        return Moments(n=n, mean_v=mean, mean_x=z["sum_x"] / safe, mean_h=z["sum_h"] / safe, s_vv=values["m2_v"],
                       s_xx=z["m2_x"], s_hh=z["m2_h"], s_xh=z["c_xh"], s_xv=z["c_xv"], s_hv=z["c_hv"])


def _cuped(at: Rows, arms: StratumStats, arm_t: ArmStats, arm_c: ArmStats, means: tuple, variances: tuple):
    """Each stratum row's arm means and CS variances adjusted for the covariate (``stats.cuped``)
    where it applies: a kind whose estimand is the mean of the unit values (not the ratio of
    sums), with a covariate that varies. Returns ``(mean_t, var_t, mean_c, var_c, applied)``;
    each variance is the kind's, scaled by the share of the arm's centered sum its residuals keep
    (``p (1 - p)`` of a binary arm becomes the residuals' variance)."""
    adj = adjust(_moments(arms.treatment, means[0]), _moments(arms.control, means[1]))
    applied = adj.applies & (at.kinds != "ratio_of_sums") & np.isfinite(adj.diff)
    out = []
    for arm, mean, var, adj_mean, resid in ((arm_t, means[0], variances[0], adj.mean_t, adj.resid_t),
                                            (arm_c, means[1], variances[1], adj.mean_c, adj.resid_c)):
        with np.errstate(invalid="ignore", divide="ignore"):
            kept = np.where(arm.m2 > 0, var * resid / np.where(arm.m2 > 0, arm.m2, 1), resid / np.where(arm.n > 0, arm.n, 1))
        out += [np.where(applied, adj_mean, mean), np.where(applied, kept, var)]
    return (*out, applied)


def strata(at: Rows, arms: StratumStats) -> Estimate:
    """Strata combined into one estimate weighted by their units; arms pooled over them."""
    arm_t, ratio_t = _arm_stats(arms.treatment)
    arm_c, ratio_c = _arm_stats(arms.control)
    raw_t, raw_var_t = _kind_stats(at.kinds, arm_t, ratio_t)
    raw_c, raw_var_c = _kind_stats(at.kinds, arm_c, ratio_c)
    mean_t, var_t, mean_c, var_c, applied = _cuped(at, arms, arm_t, arm_c, (raw_t, raw_c), (raw_var_t, raw_var_c))
    first = _group_starts(at.cid, at.d)
    group = np.repeat(np.arange(first.size), np.diff(np.append(first, at.cid.size)))
    both = (arm_t.n > 0) & (arm_c.n > 0) & np.isfinite(mean_t) & np.isfinite(mean_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        v_t, v_c = var_t / np.where(arm_t.n > 0, arm_t.n, 1), var_c / np.where(arm_c.n > 0, arm_c.n, 1)
    v = v_t + v_c
    units = arm_t.n + arm_c.n
    w_units = np.where(both, units, 0.0)
    w_total = np.add.reduceat(w_units, first)
    periods = np.add.reduceat(both.astype(float), first)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(both, w_units / w_total[group], 0.0)
    strat_t = np.add.reduceat(w * np.where(both, mean_t, 0.0), first)
    strat_c = np.add.reduceat(w * np.where(both, mean_c, 0.0), first)
    diff = np.add.reduceat(w * np.where(both, mean_t - mean_c, 0.0), first)
    se2_t, se2_c = (np.add.reduceat(w**2 * np.where(both, x, 0.0), first) for x in (v_t, v_c))
    se2 = np.add.reduceat(w**2 * np.where(both, v, 0.0), first)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw_v = raw_var_t / np.where(arm_t.n > 0, arm_t.n, 1) + raw_var_c / np.where(arm_c.n > 0, arm_c.n, 1)
    raw_se2 = np.add.reduceat(w**2 * np.where(both, raw_v, 0.0), first)
    cuped = np.add.reduceat((applied & both).astype(float), first) > 0
    bad_v = np.add.reduceat((both & ~np.isfinite(v)).astype(float), first)
    kinds = at.kinds[first]
    pooled_t, ratio_pt = _arm_stats(_pool(arms.treatment, first, group))
    pooled_c, ratio_pc = _arm_stats(_pool(arms.control, first, group))
    mt, vt = _kind_stats(kinds, pooled_t, ratio_pt)
    mc, vc = _kind_stats(kinds, pooled_c, ratio_pc)
    defined, known = periods > 0, (periods > 0) & (bad_v == 0)
    return Estimate(first, np.where(defined, diff, np.nan), np.where(known, se2, np.nan),
                    np.add.reduceat(units, first), periods, pooled_t, pooled_c, mt, vt, mc, vc,
                    np.where(defined, strat_t, np.nan), np.where(defined, strat_c, np.nan),
                    np.where(known, se2_t, np.nan), np.where(known, se2_c, np.nan), cuped,
                    np.where(cuped & known & (raw_se2 > 0), 1 - se2 / np.where(raw_se2 > 0, raw_se2, 1), np.nan))


class Nights(NamedTuple):
    """Each comparison at each output night: one row of the table.

    Attributes:
        design: the comparison's design row (``design.COLUMNS``).
        as_of: the night.
        e, d: experiment and night positions; treatment, control: arm positions.
        kinds: the metric kind.
        cid: the comparison (its row of the design), so that running quantities can follow
            each comparison along its nights.
    """

    design: pl.DataFrame
    as_of: pl.Series
    e: np.ndarray
    d: np.ndarray
    treatment: np.ndarray
    control: np.ndarray
    kinds: np.ndarray
    cid: np.ndarray

    def column(self, name: str) -> np.ndarray:
        """A numeric design column as float64."""
        return self.design.get_column(name).cast(pl.Float64).to_numpy()


def nights(at: Rows, estimate: Estimate) -> Nights:
    """The rows of :class:`Rows` that start a comparison and night, with their design."""
    first = estimate.first
    return Nights(at.design.gather(at.cid[first]), at.as_of.gather(first), at.e[first], at.d[first],
                  at.treatment[first], at.control[first], at.kinds[first], at.cid[first])


class Figures(NamedTuple):
    """The fixed-horizon figures of each comparison and night (labelled descriptive).

    Attributes:
        described: the test and interval of its metric kind (``metrics.Descriptive``), or
            the stratified normal ones where several strata were combined.
        lift: the relative lift and its log-scale interval, on the stratified estimate (the
            stratified treatment mean over the stratified control mean, delta method).
        disagree: the interval excludes zero while the exact (or the kind's) test is not
            below 0.05, or the other way round.
    """

    described: Descriptive
    lift: LiftResult
    disagree: np.ndarray


def _by_kind(kinds: np.ndarray, t: ArmStats, c: ArmStats) -> Descriptive:
    """Descriptive figures per row by its metric kind (the ratio kind reads its sums, not ``mean``)."""
    size = t.n.shape
    out = Descriptive(*([np.full(size, np.nan) for _ in range(4)]
                        + [np.full(size, None, dtype=object), np.full(size, None, dtype=object)]
                        + [np.full(size, np.nan) for _ in range(4)]))
    for name, spec in KINDS.items():
        i = kinds == name
        if not i.any():
            continue
        res = spec.describe(ArmStats(*(f[i] for f in t)), ArmStats(*(f[i] for f in c)))
        for target, value in zip(out, res):
            target[i] = value
    return out


def descriptive(at: Nights, estimate: Estimate) -> Figures:
    """The fixed-horizon figures per metric kind; where strata were combined or the covariate
    adjusted the difference (CUPED), the normal test and interval of that estimate instead."""
    desc = _by_kind(at.kinds, estimate.treatment, estimate.control)
    strat = (estimate.periods > 1) | estimate.cuped
    if strat.any():
        z = sps.norm.isf(DESCRIPTIVE_ALPHA / 2)
        diff, se = estimate.diff, np.sqrt(estimate.se2)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_strat = 2 * sps.norm.sf(np.abs(diff) / se)
        for target, value in ((desc.diff, diff), (desc.ci_low, diff - z * se), (desc.ci_high, diff + z * se),
                              (desc.p_value, p_strat)):
            target[strat] = value[strat]
        method = np.where(estimate.cuped, CUPED_METHOD, "stratified_normal")
        desc.ci_method[strat] = method[strat]
        desc.p_method[strat] = method[strat]
    # the lift is read on the same (stratified) estimate as the difference: the stratified
    # treatment mean over the stratified control mean, each mean's squared standard error given
    # as a variance over one unit (delta method on the log ratio); a missing mean leaves it
    # undefined, a missing variance (one unit) counts as 0
    one = np.ones_like(estimate.diff)
    lift = relative_lift(estimate.strat_t, np.nan_to_num(estimate.strat_se2_t), one, estimate.strat_c,
                         np.nan_to_num(estimate.strat_se2_c), one)
    excludes = (desc.ci_low > 0) | (desc.ci_high < 0)
    exact_p = np.where(np.isnan(desc.fisher_p), desc.p_value, desc.fisher_p)
    disagree = np.where(np.isnan(exact_p) | np.isnan(desc.ci_low), False, excludes != (exact_p < DESCRIPTIVE_ALPHA))
    return Figures(desc, lift, disagree)
