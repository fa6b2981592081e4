"""The look: sufficient statistics of every experiment at every night to decisions, in one pass.

Pure polars and NumPy (no Dagster, no SQL): :func:`analyse` takes the frames of
:class:`LookInputs` (what ``look.py`` reads from the warehouse, or what a benchmark or a
simulation builds) and returns one row per night, experiment, metric and comparison with
the :data:`~zcl_assets.analysis.schema.EXPERIMENT_ANALYSIS` columns. Nothing loops over
experiments or comparisons: experiments, nights, arms and metrics have integer positions
(``grid.Grid``), statistics at a night are found by a sorted search, per-kind statistics
run on masks of whole columns, strata and families are reduced in sorted order.

Per comparison and night (DESIGN section 6):

1. strata (periods between declared allocation changes and reopen events) are combined
   into one estimate weighted by their units, so a declared allocation change cannot
   confound the estimate (Simpson);
2. the confidence sequence, tuned at registration (``comparison_alpha`` and the planned
   sample), gives the anytime-valid p-value; Holm over the experiment's primary
   comparisons (an undefined p counted as 1) gives the adjusted p-value and the level each
   comparison's CS is read at (its Holm step), so a CS excludes zero exactly when Holm
   rejects;
3. guardrails are read at ``comparison_alpha`` (non-inferior when the lower end in the
   beneficial direction is above minus the margin);
4. ``stats.decision.decide`` applies the rule, first match wins, with rule 1 from
   ``quality.rule_one`` (sticky until a reopen event);
5. descriptive figures (labelled as such) per metric kind, progress figures, and the
   reason in words with the numbers behind it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl
from scipy import stats as sps

from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.metrics import KINDS, ArmStats, Descriptive
from zcl_assets.analysis.quality import reasons as invalid_reasons
from zcl_assets.analysis.quality import rule_one
from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS
from zcl_assets.stats.decision import BURN_IN_MIN_COUNT, decide
from zcl_assets.stats.lift import relative_lift
from zcl_assets.stats.multiplicity import holm_steps
from zcl_assets.stats.power import power_at
from zcl_assets.stats.sequential import anytime_pvalue, cs_halfwidth, optimal_rho

STAT_COLUMNS = ("n", "sum_v", "m2_v", "variance", "successes", "observations", "sum_y", "sum_m", "c_yy", "c_mm", "c_ym")


class LookInputs(NamedTuple):
    """Everything one pass of the look needs (frames; see ``look.py`` for their SQL).

    Attributes:
        comparisons: one row per experiment, metric, estimand and treatment arm (the design,
            ``design.comparisons``).
        looks: ``experiment_id, as_of, days_since_first_assignment, status, epoch, output``.
        arm_stats: cumulative sufficient statistics ``experiment_id, metric, arm, segment,
            day`` + :data:`STAT_COLUMNS` (rows only on days they changed).
        assigned: cumulative units first assigned ``experiment_id, arm, segment, day, units``.
        segments: ``experiment_id, segment, epoch``.
        shares: ``experiment_id, segment, arm, share`` (null share: allocation unknown).
        arms: ``experiment_id, arm, arm_order`` (registration order).
        experiments: ``experiment_id, primary_metric, srm_n_star, allocation_known,
            check_verified``.
        violations: ``experiment_id, epoch, day, bad, total`` (rows of that day).
        drift: ``experiment_id, epoch, drift_day`` (first day a second control digest showed).
        both_arms: ``experiment_id, day, users`` (users seen in a second arm that day).
    """

    comparisons: pl.DataFrame
    looks: pl.DataFrame
    arm_stats: pl.DataFrame
    assigned: pl.DataFrame
    segments: pl.DataFrame
    shares: pl.DataFrame
    arms: pl.DataFrame
    experiments: pl.DataFrame
    violations: pl.DataFrame
    drift: pl.DataFrame
    both_arms: pl.DataFrame


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


def _group_starts(*keys: np.ndarray) -> np.ndarray:
    """Index of the first row of each run of equal keys (rows sorted by the keys)."""
    n = keys[0].size
    start = np.zeros(n, dtype=bool)
    if n:
        start[0] = True
        for k in keys:
            start[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(start)


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


def _arm_stats(values: dict[str, np.ndarray]) -> tuple[ArmStats, np.ndarray]:
    n = np.nan_to_num(values["n"])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, values["sum_v"] / np.where(n > 0, n, 1), np.nan)
        ratio_mean = values["sum_y"] / values["sum_m"]
    arm = ArmStats(n=n, mean=mean, m2=values["m2_v"], variance=values["variance"], successes=values["successes"],
                   observations=values["observations"], sum_y=values["sum_y"], sum_m=values["sum_m"],
                   c_yy=values["c_yy"], c_mm=values["c_mm"], c_ym=values["c_ym"])
    return arm, ratio_mean


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


def _describe(kinds: np.ndarray, t: ArmStats, c: ArmStats) -> Descriptive:
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


def _fmt(expr: pl.Expr, digits: int = 3) -> pl.Expr:
    return expr.round_sig_figs(digits).cast(pl.String).fill_null("undefined")


def _reason_parts() -> tuple[pl.Expr, dict[int, pl.Expr]]:
    """Which template each primary row's reason uses, and the templates (words with figures)."""
    level_pct = ((1 - pl.col("cs_level")) * 100).round(2).cast(pl.String)
    cs = pl.format("the {}% confidence sequence [{}, {}]", level_pct, _fmt(pl.col("cs_low"), 4), _fmt(pl.col("cs_high"), 4))
    padj = pl.format("Holm-adjusted anytime-valid p = {} against alpha share {}", _fmt(pl.col("cs_p_adjusted")),
                     _fmt(pl.col("alpha_share")))
    collecting = pl.format(
        "collecting{}: {}% of the planned sample{}",
        pl.when(pl.col("plan_reachable")).then(pl.lit(""))
        .otherwise(pl.lit(" (the planned sample is unreachable, so only adopt or reject can end it)")),
        (pl.col("information_fraction") * 100).round(0).cast(pl.Int64).cast(pl.String).fill_null("0"),
        pl.when(pl.col("days_to_plan").is_not_null())
        .then(pl.format(", about {} more days at the current traffic", pl.col("days_to_plan").cast(pl.Int64)))
        .otherwise(pl.lit("")),
    )
    templates = {
        1: pl.col("base_reason"),
        2: pl.format("invalid since {}: {} (sticky until a reopened event)", pl.col("invalid_since").cast(pl.String),
                     pl.col("invalid_reason")),
        3: pl.format("{} lies entirely on the harmful side of zero ({})", cs, padj),
        4: pl.format("{} lies entirely on the beneficial side of zero ({}){}", cs, padj,
                     pl.when(pl.col("guardrail_status").is_not_null())
                     .then(pl.format("; guardrails: {}", pl.col("guardrail_status"))).otherwise(pl.lit(""))),
        5: pl.format("{} is on the beneficial side of zero ({}), but adopt is {}: {}", cs, padj, pl.col("base_reason"),
                     pl.col("guardrail_status")),
        6: pl.format("planned sample reached; {} lies inside (-MDE, +MDE) = (-{}, {})", cs, _fmt(pl.col("mde")),
                     _fmt(pl.col("mde"))),
        7: pl.format("planned sample reached; {} neither excludes zero nor lies inside (-{}, {})", cs,
                     _fmt(pl.col("mde")), _fmt(pl.col("mde"))),
        8: pl.format("{} (units {} / {}; {} days since the first assignment)", pl.col("base_reason"),
                     pl.col("n_control").cast(pl.Int64), pl.col("n_treatment").cast(pl.Int64),
                     pl.col("days_since_first_assignment").round(1).cast(pl.String).fill_null("no assignment yet")),
        9: pl.format("{}; {} includes zero", collecting, cs),
    }
    which = (
        pl.when(~pl.col("is_primary")).then(None)  # no template: a guardrail row has no reason of its own
        .when(pl.col("decision_rule") == 1).then(pl.when(pl.col("registration_refused")).then(pl.lit(1)).otherwise(pl.lit(2)))
        .when(pl.col("decision") == "reject").then(pl.lit(3))
        .when(pl.col("decision") == "adopt").then(pl.lit(4))
        .when(pl.col("decision_rule") == 4).then(pl.lit(5))
        .when(pl.col("decision") == "no_effect").then(pl.lit(6))
        .when(pl.col("decision") == "inconclusive").then(pl.lit(7))
        .when(pl.col("decision_rule") == 2).then(pl.lit(8))
        .when(pl.col("base_reason").str.starts_with("collecting")).then(pl.lit(9))
        .otherwise(pl.lit(1))
    )
    return which, templates


def _reasons(frame: pl.DataFrame) -> pl.Series:
    """The decision's reason in words, with the figures behind it, for every primary row.

    Each template is formatted on the rows that use it only (a handful of templates, never a
    loop over rows or experiments).
    """
    which, templates = _reason_parts()
    needed = ["base_reason", "invalid_since", "invalid_reason", "cs_level", "cs_low", "cs_high", "cs_p_adjusted",
              "alpha_share", "guardrail_status", "mde", "n_control", "n_treatment", "days_since_first_assignment",
              "plan_reachable", "information_fraction", "days_to_plan", "is_primary", "decision_rule",
              "registration_refused", "decision"]
    keyed = frame.select(needed).with_columns(which.alias("_template"), pl.int_range(pl.len()).alias("_row"))
    parts = [pl.DataFrame(schema={"_row": pl.Int64, "reason": pl.String})]
    for key, template in templates.items():
        sub = keyed.filter(pl.col("_template") == key)
        if sub.height:
            parts.append(sub.select(pl.col("_row").cast(pl.Int64), template.alias("reason")))
    filled = pl.concat(parts)
    out = pl.DataFrame({"_row": pl.int_range(frame.height, eager=True).cast(pl.Int64)}).join(
        filled, on="_row", how="left", maintain_order="left")
    return out.get_column("reason").alias("decision_reason")


def analyse(inputs: LookInputs) -> pl.DataFrame:
    """One pass of the look over every experiment and night in ``inputs.looks``.

    Rule 1 is evaluated at every night (stickiness needs the path); the comparisons are
    computed at the nights with ``output`` set.

    Returns:
        One row per output night, experiment, metric, estimand and treatment arm, with the
        :data:`EXPERIMENT_ANALYSIS` columns (except ``analysed_at``). Comparisons whose arms
        have no analysable units are kept, with decision ``continue`` or ``invalid``.
    """
    schema = EXPERIMENT_ANALYSIS.polars
    looks = inputs.looks
    if looks.filter(pl.col("output")).height == 0 or inputs.comparisons.height == 0:
        return pl.DataFrame(schema=schema)
    # the SQL aggregates exactly the metrics the design compares
    grid = Grid.build(looks, inputs.segments, inputs.arms, inputs.comparisons.select("experiment_id", "metric"))
    primary = inputs.experiments.select("experiment_id", pl.col("primary_metric").alias("metric"))
    verified = inputs.arm_stats.join(primary, on=["experiment_id", "metric"]).select(
        "experiment_id", "arm", "segment", "day", pl.col("n").alias("units"))
    output = np.zeros(grid.shape, dtype=bool)
    out_rows = looks.filter(pl.col("output"))
    output[grid.e(out_rows.get_column("experiment_id")), grid.d(out_rows.get_column("as_of"))] = True
    valid = rule_one(grid, inputs.assigned, verified, inputs.shares, inputs.experiments, inputs.violations, inputs.drift,
                     output)

    # the comparison rows: design x output nights x strata
    comp = inputs.comparisons.sort("cid")
    out_looks = looks.filter(pl.col("output")).select("experiment_id", "as_of", "status")
    rows = comp.select("cid", "experiment_id").join(out_looks.select("experiment_id", "as_of"), on="experiment_id")
    rows = rows.join(inputs.segments.select("experiment_id", "segment"), on="experiment_id").sort("cid", "as_of", "segment")
    cid = rows.get_column("cid").to_numpy()
    e = grid.e(rows.get_column("experiment_id"))
    d = grid.d(rows.get_column("as_of"))
    seg = rows.get_column("segment").to_numpy()
    m = grid.metric(e, comp.get_column("metric").gather(cid))
    jt = grid.arm(e, comp.get_column("treatment_arm").gather(cid))
    jc = grid.arm(e, comp.get_column("control_arm").gather(cid))
    kinds = comp.get_column("metric_kind").to_numpy()[cid]

    st = inputs.arm_stats
    se_ = grid.e(st.get_column("experiment_id"))
    n_seg, n_arm, n_met = grid.segment_epoch.shape[1], grid.max_arms, grid.n_metrics

    def key(e_, m_, j_, s_):
        return ((e_ * n_met + m_) * n_arm + j_) * n_seg + s_

    sm = grid.metric(se_, st.get_column("metric"))
    sj = grid.arm(se_, st.get_column("arm"))
    skey = np.where((sm >= 0) & (sj >= 0), key(se_, sm, sj, st.get_column("segment").to_numpy()), -1)
    lookup = _Lookup(skey, grid.d(st.get_column("day")), grid.nights)
    columns = {c: st.get_column(c).cast(pl.Float64).to_numpy() for c in STAT_COLUMNS}

    def gather(j):
        i = lookup(np.where((m >= 0) & (j >= 0), key(e, m, j, seg), -2), d)
        if not st.height:  # no figures at all yet
            return {c: np.full(i.shape, np.nan) for c in columns}
        return {c: np.where(i >= 0, v[np.maximum(i, 0)], np.nan) for c, v in columns.items()}

    t_vals, c_vals = gather(jt), gather(jc)
    arm_t, ratio_t = _arm_stats(t_vals)
    arm_c, ratio_c = _arm_stats(c_vals)
    mean_t, var_t = _kind_stats(kinds, arm_t, ratio_t)
    mean_c, var_c = _kind_stats(kinds, arm_c, ratio_c)

    # strata combined into one estimate, weighted by units
    first = _group_starts(cid, d)
    group = np.repeat(np.arange(first.size), np.diff(np.append(first, cid.size)))
    both = (arm_t.n > 0) & (arm_c.n > 0) & np.isfinite(mean_t) & np.isfinite(mean_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = var_t / np.where(arm_t.n > 0, arm_t.n, 1) + var_c / np.where(arm_c.n > 0, arm_c.n, 1)
    units = arm_t.n + arm_c.n
    w_units = np.where(both, units, 0.0)
    w_total = np.add.reduceat(w_units, first)
    strata = np.add.reduceat(both.astype(float), first)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(both, w_units / w_total[group], 0.0)
    diff = np.add.reduceat(w * np.where(both, mean_t - mean_c, 0.0), first)
    se2 = np.add.reduceat(w**2 * np.where(both, v, 0.0), first)
    bad_v = np.add.reduceat((both & ~np.isfinite(v)).astype(float), first)
    diff = np.where(strata > 0, diff, np.nan)
    se2 = np.where((strata > 0) & (bad_v == 0), se2, np.nan)
    n_total = np.add.reduceat(units, first)

    # one row per comparison and night from here on
    cid1, e1, d1 = cid[first], e[first], d[first]
    kinds1 = kinds[first]
    pt, pc = _pool(t_vals, first, group), _pool(c_vals, first, group)
    arm_pt, ratio_pt = _arm_stats(pt)
    arm_pc, ratio_pc = _arm_stats(pc)
    mt, vt = _kind_stats(kinds1, arm_pt, ratio_pt)
    mc, vc = _kind_stats(kinds1, arm_pc, ratio_pc)
    desc = _describe(kinds1, arm_pt, arm_pc)
    strat = strata > 1
    if strat.any():
        z = sps.norm.isf(0.025)
        se = np.sqrt(se2)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_strat = 2 * sps.norm.sf(np.abs(diff) / se)
        for target, value in ((desc.diff, diff), (desc.ci_low, diff - z * se), (desc.ci_high, diff + z * se),
                              (desc.p_value, p_strat)):
            target[strat] = value[strat]
        desc.ci_method[strat] = "stratified_normal"
        desc.p_method[strat] = "stratified_normal"
    # a missing mean leaves the lift undefined; a missing variance (one unit) counts as 0
    lift = relative_lift(mt, np.nan_to_num(vt), arm_pt.n, mc, np.nan_to_num(vc), arm_pc.n)
    excludes = (desc.ci_low > 0) | (desc.ci_high < 0)
    exact_p = np.where(np.isnan(desc.fisher_p), desc.p_value, desc.fisher_p)
    disagree = np.where(np.isnan(exact_p) | np.isnan(desc.ci_low), False, excludes != (exact_p < 0.05))

    design = comp.gather(cid1)

    def dcol(name):
        return design.get_column(name).cast(pl.Float64).to_numpy()

    # the confidence sequence, Holm over the primary comparisons of each experiment and night
    comp_alpha = dcol("comparison_alpha")
    rho = optimal_rho(comp_alpha, dcol("tuning_n_total"))
    sigma2 = n_total * se2
    p_raw = anytime_pvalue(diff, sigma2, n_total, rho)
    is_primary = design.get_column("is_primary").to_numpy()
    level = comp_alpha.copy()
    adjusted = np.full(cid1.shape, np.nan)
    family = np.zeros(cid1.shape, dtype=np.int64)
    if is_primary.any():
        sel = np.flatnonzero(is_primary)
        holm = holm_steps(p_raw[sel], e1[sel] * grid.nights + d1[sel], dcol("alpha_share")[sel])
        level[sel] = holm.level
        adjusted[sel] = np.where(np.isnan(p_raw[sel]), np.nan, holm.adjusted)
        family[sel] = holm.family_size
    hw = cs_halfwidth(sigma2, n_total, rho, level)
    cs_low, cs_high = diff - hw, diff + hw
    binary = kinds1 == "binary_proportion"
    # a difference of proportions lies in [-1, 1]; the halfwidth is not negative, so only the
    # outer ends can leave it
    cs_low = np.where(binary, np.maximum(cs_low, -1.0), cs_low)
    cs_high = np.where(binary, np.minimum(cs_high, 1.0), cs_high)

    # guardrails: first one not shown non-inferior, per experiment, night and treatment arm
    sign = dcol("sign")
    b_lo = np.where(sign > 0, cs_low, -cs_high)
    margin = dcol("margin")
    guard = design.get_column("role").to_numpy() == "guardrail"
    non_inferior = np.isfinite(b_lo) & (b_lo > -margin)
    jt1 = jt[first]
    g_frame = pl.DataFrame({"k": (e1 * grid.nights + d1) * n_arm + jt1, "order": dcol("guardrail_order"),
                            "metric": design.get_column("metric"), "ok": non_inferior, "b_lo": b_lo, "margin": margin})
    g_frame = g_frame.filter(pl.Series(guard)).sort("k", "order").with_columns(
        pl.when(pl.col("ok")).then(pl.format(
            "{}: non-inferior (CS lower end {} in the beneficial direction is above -{})",
            "metric", pl.col("b_lo").round_sig_figs(4), pl.col("margin").round_sig_figs(4)))
        .otherwise(pl.format(
            "{}: not shown non-inferior (CS lower end {} in the beneficial direction, margin -{})",
            "metric", pl.col("b_lo").round_sig_figs(4).cast(pl.String).fill_null("undefined"),
            pl.col("margin").round_sig_figs(4))).alias("line"))
    g_agg = g_frame.group_by("k").agg(
        pl.col("metric").filter(~pl.col("ok")).first().alias("failing"), pl.col("line").str.join("; ").alias("status"))
    key1 = pl.DataFrame({"k": (e1 * grid.nights + d1) * n_arm + jt1}).join(g_agg, on="k", how="left", maintain_order="left")
    hold = key1.select(pl.when(pl.col("failing").is_not_null()).then(pl.format("held by guardrail {}", "failing"))
                       .otherwise(pl.lit(""))).to_series().to_numpy()
    guardrail_status = key1.get_column("status")

    # progress: assigned units, verified share, information fraction, days to plan, power
    assigned_t = valid.assigned[e1, d1, np.maximum(jt1, 0)] * (jt1 >= 0)
    jc1 = jc[first]
    assigned_c = valid.assigned[e1, d1, np.maximum(jc1, 0)] * (jc1 >= 0)
    days_grid = np.full(grid.shape, np.nan)
    days_grid[grid.e(looks.get_column("experiment_id")), grid.d(looks.get_column("as_of"))] = \
        looks.get_column("days_since_first_assignment").cast(pl.Float64).to_numpy()
    days = days_grid[e1, d1]
    ba = inputs.both_arms
    both_users = np.cumsum(grid.tensor((grid.e(ba.get_column("experiment_id")),), grid.d(ba.get_column("day")),
                                       ba.get_column("users").cast(pl.Float64).to_numpy(), (), carry=False), axis=1)
    sessions_source = design.get_column("analysis_unit").to_numpy() == "session"
    plan_c, plan_t = dcol("planned_n_per_arm"), dcol("planned_n_treatment")
    reachable = design.get_column("plan_reachable").to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        verified_share = (arm_pt.n + arm_pc.n) / (assigned_t + assigned_c)
        info = np.minimum(assigned_t / plan_t, assigned_c / plan_c)
        left = np.maximum(np.maximum(plan_t - assigned_t, 0) / (assigned_t / days),
                          np.maximum(plan_c - assigned_c, 0) / (assigned_c / days))
    days_to_plan = np.where(reachable & (days > 0) & np.isfinite(left), np.ceil(left), np.nan)
    power = np.full(cid1.shape, np.nan)
    plan_binary = design.get_column("plan_metric").to_numpy() == "binary"
    for metric, sel in (("binary", plan_binary & is_primary), ("continuous", ~plan_binary & is_primary)):
        if sel.any():
            power[sel] = power_at(arm_pc.n[sel], dcol("mde_signed")[sel], dcol("baseline_mean")[sel], comp_alpha[sel],
                                  dcol("ratio")[sel], baseline_sd=dcol("unit_sd")[sel] if metric == "continuous" else None,
                                  metric=metric, inflation=dcol("inflation")[sel])

    # the rule
    binary_counts = design.get_column("binary_metric").to_numpy()
    big = 10.0 * BURN_IN_MIN_COUNT
    refused = design.get_column("registration_refused").to_numpy()
    invalid = valid.invalid[e1, d1]
    decision = decide(
        ci_low=cs_low, ci_high=cs_high, mde=dcol("mde"), n_t=arm_pt.n, n_c=arm_pc.n,
        n_plan=plan_c * dcol("expected_verified_share"), min_samples=dcol("min_samples_per_arm"),
        days_since_first_assignment=days, direction=sign, allocation_ratio=dcol("ratio"),
        successes_t=np.where(binary_counts, arm_pt.successes, big),
        failures_t=np.where(binary_counts, arm_pt.observations - arm_pt.successes, big),
        successes_c=np.where(binary_counts, arm_pc.successes, big),
        failures_c=np.where(binary_counts, arm_pc.observations - arm_pc.successes, big),
        already_invalid=invalid & ~refused, registration_refused=refused, plan_reachable=reachable,
        guardrail_hold=hold,
    )
    since = valid.invalid_since[e1, d1]
    since_date = [None] * since.size
    if (since >= 0).any():
        base = np.datetime64(grid.day0, "D")
        since_date = pl.Series((base + since.astype("timedelta64[D]")).astype("datetime64[D]")).to_list()
        since_date = [s if f >= 0 else None for s, f in zip(since_date, since)]
    primary_only = np.where(is_primary, decision.label, None)
    frame = design.with_columns(
        rows.get_column("as_of").gather(first).alias("as_of"),
        pl.Series("days_since_first_assignment", days),
        pl.Series("difference", diff), pl.Series("periods", strata.astype(np.int64)),
        pl.Series("n_control", arm_pc.n), pl.Series("n_treatment", arm_pt.n),
        pl.Series("successes_control", np.where(binary_counts, arm_pc.successes, np.nan)),
        pl.Series("successes_treatment", np.where(binary_counts, arm_pt.successes, np.nan)),
        pl.Series("mean_control", mc), pl.Series("mean_treatment", mt),
        pl.Series("variance_control", vc), pl.Series("variance_treatment", vt),
        pl.Series("ci_low", desc.ci_low), pl.Series("ci_high", desc.ci_high), pl.Series("p_value", desc.p_value),
        pl.Series("ci_method", desc.ci_method.tolist(), dtype=pl.String),
        pl.Series("p_method", desc.p_method.tolist(), dtype=pl.String),
        pl.Series("fisher_p_value", desc.fisher_p), pl.Series("fisher_odds_ratio", desc.fisher_or),
        pl.Series("fisher_or_ci_low", desc.fisher_or_low), pl.Series("fisher_or_ci_high", desc.fisher_or_high),
        pl.Series("interval_test_disagree", disagree),
        pl.Series("relative_lift", np.asarray(lift.lift, float)),
        pl.Series("lift_ci_low", np.asarray(lift.ci_low, float)), pl.Series("lift_ci_high", np.asarray(lift.ci_high, float)),
        pl.Series("cs_low", cs_low), pl.Series("cs_high", cs_high), pl.Series("cs_level", level),
        pl.Series("cs_p_value", p_raw), pl.Series("cs_p_adjusted", adjusted), pl.Series("family_size", family),
        pl.Series("srm_units_control", assigned_c), pl.Series("srm_units_treatment", assigned_t),
        pl.Series("verified_share", verified_share), pl.Series("information_fraction", info),
        pl.Series("users_in_both_arms", np.where(sessions_source, both_users[e1, d1], np.nan)),
        pl.Series("days_to_plan", days_to_plan), pl.Series("power_at_mde", power),
        pl.Series("srm_sequential_p", valid.srm_sequential_p[e1, d1]),
        pl.Series("srm_chisquare_p", valid.srm_chisquare_p[e1, d1]),
        pl.Series("srm_fired", valid.ever["srm"][e1, d1]),
        pl.Series("imbalance_p_value", valid.imbalance_p[e1, d1]),
        pl.Series("contract_violation_share", valid.violation_share[e1, d1]),
        pl.Series("contract_violation_p", valid.violation_p[e1, d1]),
        pl.Series("baseline_drift", valid.ever["drift"][e1, d1]),
        pl.Series("invalid_since", since_date, dtype=pl.Date),
        pl.Series("invalid_reason", invalid_reasons(valid, e1, d1), dtype=pl.String),
        pl.Series("decision", primary_only.tolist(), dtype=pl.String),
        pl.Series("base_reason", decision.reason.tolist(), dtype=pl.String),
        pl.Series("decision_rule", decision.rule.astype(np.int64)),
        guardrail_status.alias("guardrail_status"),
    )
    look_row = np.full(grid.shape, -1, dtype=np.int64)
    look_row[grid.e(out_looks.get_column("experiment_id")), grid.d(out_looks.get_column("as_of"))] = \
        np.arange(out_looks.height)
    frame = frame.with_columns(out_looks.get_column("status").gather(look_row[e1, d1])).fill_nan(None)
    frame = frame.with_columns(
        _reasons(frame),
        pl.when(pl.col("is_primary")).then(pl.col("decision_rule")).alias("decision_rule"),
        pl.when(pl.col("is_primary")).then(pl.col("guardrail_status")).alias("guardrail_status"),
        pl.when(pl.col("is_primary")).then(pl.col("invalid_since")).alias("invalid_since"),
        pl.when(pl.col("is_primary")).then(pl.col("power_at_mde")).alias("power_at_mde"),
    )
    srm_test = pl.when(pl.col("allocation") == "unknown").then(pl.lit("constancy (allocation unknown)")) \
        .otherwise(pl.lit("known allocation (Lindon-Malek)"))
    # rows come ordered by comparison (experiment, role, metric, kind, arm) and night
    return frame.with_columns(srm_test.alias("srm_test")).select(list(schema)).cast(schema, strict=False).fill_nan(None)

