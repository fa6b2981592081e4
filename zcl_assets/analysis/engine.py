"""The look: sufficient statistics of every experiment at every night to decisions, in one pass.

Pure polars and NumPy (no Dagster, no SQL): :func:`analyse` takes the frames of
:class:`LookInputs` (what ``look.py`` reads from the warehouse, or what a benchmark or a
simulation builds) and returns one row per night, experiment, metric and comparison with
the :data:`~zcl_assets.analysis.schema.EXPERIMENT_ANALYSIS` columns. Nothing loops over
experiments or comparisons: per-kind statistics run on masks of whole columns, strata and
families are reduced in sorted order.

Per comparison and night (DESIGN section 6):

1. strata (periods between declared allocation changes and reopen events) are combined
   into one estimate, weighted by their units (Simpson-safe when the allocation changed);
2. the confidence sequence, tuned at registration (``comparison_alpha`` and the planned
   sample), gives the anytime-valid p-value; Holm over the experiment's primary
   comparisons (undefined p counted as 1) gives the adjusted p-value and the level each
   comparison's CS is read at (its Holm step), so a CS excludes zero exactly when Holm
   rejects;
3. guardrails are read at ``comparison_alpha`` (non-inferior when the beneficial-direction
   lower end is above minus the margin);
4. ``stats.decision.decide`` applies the rule, first match wins, with rule 1 from
   ``quality.rule_one`` (sticky until a reopen event);
5. descriptive figures (labelled as such) per metric kind, progress figures, and the
   reason in words with the numbers behind it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.analysis.metrics import KINDS, ArmStats, Descriptive
from zcl_assets.analysis.quality import LOOK, _codes, group_sum, rule_one
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
            from registrations and frozen plans; ``design.comparisons``).
        looks: ``experiment_id, as_of, days_since_first_assignment, status, epoch, output``.
        arm_stats: cumulative sufficient statistics ``experiment_id, metric, arm, segment,
            day`` + :data:`STAT_COLUMNS` (rows only on days they changed).
        assigned: cumulative units first assigned ``experiment_id, arm, segment, day, units``.
        segments: ``experiment_id, segment, epoch``.
        shares: ``experiment_id, segment, arm, share`` (null share: allocation unknown).
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
    experiments: pl.DataFrame
    violations: pl.DataFrame
    drift: pl.DataFrame
    both_arms: pl.DataFrame


def dense(sparse: pl.DataFrame, keys: list[str], looks: pl.DataFrame, values: list[str]) -> pl.DataFrame:
    """Cumulative values at every look: the last row of each key with ``day <= as_of``.

    ``sparse`` holds cumulative values on the days they changed; the result has one row per
    key and look of its experiment (keys with no row yet get nulls).
    """
    grid = sparse.select(keys).unique().join(looks.select("experiment_id", "as_of"), on="experiment_id")
    if grid.height == 0:
        return grid.with_columns(*(pl.lit(None, dtype=sparse.schema[v]).alias(v) for v in values))
    right = sparse.select(*keys, "day", *values).sort("day")
    return grid.sort("as_of").join_asof(
        right, left_on="as_of", right_on="day", by=keys, strategy="backward", check_sortedness=False
    ).drop("day")


def _arm(frame: pl.DataFrame, suffix: str) -> ArmStats:
    def col(name):
        return frame.get_column(f"{name}{suffix}").cast(pl.Float64).to_numpy().copy()

    n = np.nan_to_num(col("n"))
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_mean = col("sum_y") / col("sum_m")
        mean = np.where(n > 0, col("sum_v") / n, np.nan)
    return ArmStats(n=n, mean=mean, m2=col("m2_v"), variance=col("variance"), successes=col("successes"),
                    observations=col("observations"), sum_y=col("sum_y"), sum_m=col("sum_m"),
                    c_yy=col("c_yy"), c_mm=col("c_mm"), c_ym=col("c_ym")), ratio_mean


def _kind_arrays(frame: pl.DataFrame, suffix: str):
    """Per-row mean and CS variance of an arm, by the row's metric kind."""
    arm, ratio_mean = _arm(frame, suffix)
    kind = frame.get_column("metric_kind").to_numpy()
    mean = arm.mean.copy()
    var = np.full(arm.n.shape, np.nan)
    for name, spec in KINDS.items():
        i = kind == name
        if not i.any():
            continue
        sub = ArmStats(*(f[i] for f in arm))
        if name == "ratio_of_sums":
            mean[i] = ratio_mean[i]
            sub = sub._replace(mean=ratio_mean[i])
        var[i] = spec.arm_variance(sub)
    return arm, mean, var


def _pool(frame: pl.DataFrame, first: np.ndarray, keys: np.ndarray, suffix: str) -> dict[str, np.ndarray]:
    """Arm statistics pooled over strata (sums add; centered sums by Chan et al. 1979)."""
    def col(name):
        return np.nan_to_num(frame.get_column(f"{name}{suffix}").cast(pl.Float64).to_numpy())

    n = col("n")
    _, (n_sum, s_v, succ, obs, s_y, s_m) = group_sum(keys, [n, col("sum_v"), col("successes"), col("observations"),
                                                            col("sum_y"), col("sum_m")])
    idx = np.cumsum(np.isin(np.arange(keys.size), first)) - 1  # row -> group
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_v = np.where(n_sum > 0, s_v / n_sum, 0.0)
        mean_y = np.where(n_sum > 0, s_y / n_sum, 0.0)
        mean_m = np.where(n_sum > 0, s_m / n_sum, 0.0)
        row_v = np.where(n > 0, col("sum_v") / np.where(n > 0, n, 1), 0.0) - mean_v[idx]
        row_y = np.where(n > 0, col("sum_y") / np.where(n > 0, n, 1), 0.0) - mean_y[idx]
        row_m = np.where(n > 0, col("sum_m") / np.where(n > 0, n, 1), 0.0) - mean_m[idx]
    _, (m2, cyy, cmm, cym) = group_sum(keys, [col("m2_v") + n * row_v**2, col("c_yy") + n * row_y**2,
                                              col("c_mm") + n * row_m**2, col("c_ym") + n * row_y * row_m])
    raw = frame.get_column(f"variance{suffix}").cast(pl.Float64).to_numpy()
    return {"n": n_sum, "sum_v": s_v, "m2_v": m2, "variance": raw[first], "successes": succ, "observations": obs,
            "sum_y": s_y, "sum_m": s_m, "c_yy": cyy, "c_mm": cmm, "c_ym": cym}


def _describe(kinds: np.ndarray, t: ArmStats, c: ArmStats, ratio_t, ratio_c) -> Descriptive:
    size = t.n.shape
    out = Descriptive(*([np.full(size, np.nan) for _ in range(4)]
                        + [np.full(size, None, dtype=object), np.full(size, None, dtype=object)]
                        + [np.full(size, np.nan) for _ in range(4)]))
    for name, spec in KINDS.items():
        i = kinds == name
        if not i.any():
            continue
        tt, cc = ArmStats(*(f[i] for f in t)), ArmStats(*(f[i] for f in c))
        if name == "ratio_of_sums":
            tt, cc = tt._replace(mean=ratio_t[i]), cc._replace(mean=ratio_c[i])
        res = spec.describe(tt, cc)
        for target, value in zip(out, res):
            target[i] = value
    return out


def comparisons_at_looks(inputs: LookInputs, looks: pl.DataFrame) -> pl.DataFrame:
    """Estimates, CS inputs and descriptive figures of every comparison at ``looks``."""
    comp = inputs.comparisons
    stats = dense(inputs.arm_stats, ["experiment_id", "metric", "arm", "segment"], looks, list(STAT_COLUMNS))
    grid = (
        comp.join(inputs.segments.select("experiment_id", "segment"), on="experiment_id")
        .join(looks.select("experiment_id", "as_of"), on="experiment_id")
    )
    key = ["experiment_id", "metric", "segment", "as_of"]
    t = stats.rename({c: f"{c}_t" for c in STAT_COLUMNS}).rename({"arm": "treatment_arm"})
    c = stats.rename({c: f"{c}_c" for c in STAT_COLUMNS}).rename({"arm": "control_arm"})
    grid = grid.join(t, on=key + ["treatment_arm"], how="left").join(c, on=key + ["control_arm"], how="left")
    grid = grid.sort("cid", "as_of", "segment")
    arm_t, mean_t, var_t = _kind_arrays(grid, "_t")
    arm_c, mean_c, var_c = _kind_arrays(grid, "_c")
    n_t, n_c = arm_t.n, arm_c.n
    both = (n_t > 0) & (n_c > 0) & np.isfinite(mean_t) & np.isfinite(mean_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = var_t / np.where(n_t > 0, n_t, 1) + var_c / np.where(n_c > 0, n_c, 1)
    units = n_t + n_c
    w_units = np.where(both, units, 0.0)
    keys = _codes(grid, ["cid", "as_of"])
    first, (w_total, strata, n_all) = group_sum(keys, [w_units, both.astype(float), units])
    idx = np.cumsum(np.isin(np.arange(keys.size), first)) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(both, w_units / w_total[idx], 0.0)
        _, (diff, se2, bad_v) = group_sum(keys, [w * np.where(both, mean_t - mean_c, 0.0),
                                                 w**2 * np.where(both, v, 0.0),
                                                 (both & ~np.isfinite(v)).astype(float)])
    diff = np.where(strata > 0, diff, np.nan)
    se2 = np.where((strata > 0) & (bad_v == 0), se2, np.nan)
    out = grid[first].select(
        "cid", "as_of", *[x for x in comp.columns if x not in ("cid",)]
    ).with_columns(pl.Series("difference", diff), pl.Series("se2", se2), pl.Series("n_total", n_all),
                   pl.Series("periods", strata.astype(np.int64)))
    pooled_t = _pool(grid, first, keys, "_t")
    pooled_c = _pool(grid, first, keys, "_c")
    frame = pl.DataFrame({f"{k}_t": v for k, v in pooled_t.items()} | {f"{k}_c": v for k, v in pooled_c.items()})
    out = pl.concat([out, frame], how="horizontal")
    # pooled arms: descriptive figures (stratified normal interval when there are several strata)
    pt, mt, vt = _kind_arrays(out, "_t")
    pc, mc, vc = _kind_arrays(out, "_c")
    kinds = out.get_column("metric_kind").to_numpy()
    _, ratio_t = _arm(out, "_t")
    _, ratio_c = _arm(out, "_c")
    desc = _describe(kinds, pt, pc, ratio_t, ratio_c)
    strat = out.get_column("periods").to_numpy() > 1
    if strat.any():
        from scipy import stats as sps

        z = sps.norm.isf(0.025)
        se = np.sqrt(se2)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = 2 * sps.norm.sf(np.abs(diff) / se)
        for target, value in ((desc.diff, diff), (desc.ci_low, diff - z * se), (desc.ci_high, diff + z * se),
                              (desc.p_value, p)):
            target[strat] = value[strat]
        desc.ci_method[strat] = "stratified_normal"
        desc.p_method[strat] = "stratified_normal"
    lift = relative_lift(np.nan_to_num(mt, nan=-1.0), np.nan_to_num(vt), pt.n, np.nan_to_num(mc, nan=-1.0),
                         np.nan_to_num(vc), pc.n)
    excludes = (desc.ci_low > 0) | (desc.ci_high < 0)
    exact_p = np.where(np.isnan(desc.fisher_p), desc.p_value, desc.fisher_p)
    disagree = np.where(np.isnan(exact_p) | np.isnan(desc.ci_low), False, excludes != (exact_p < 0.05))
    return out.with_columns(
        pl.Series("mean_t", mt), pl.Series("mean_c", mc), pl.Series("var_t", vt), pl.Series("var_c", vc),
        pl.Series("ci_low", desc.ci_low), pl.Series("ci_high", desc.ci_high),
        pl.Series("p_value", desc.p_value),
        pl.Series("ci_method", desc.ci_method.tolist(), dtype=pl.String),
        pl.Series("p_method", desc.p_method.tolist(), dtype=pl.String),
        pl.Series("fisher_p_value", desc.fisher_p), pl.Series("fisher_odds_ratio", desc.fisher_or),
        pl.Series("fisher_or_ci_low", desc.fisher_or_low), pl.Series("fisher_or_ci_high", desc.fisher_or_high),
        pl.Series("interval_test_disagree", disagree),
        pl.Series("relative_lift", np.asarray(lift.lift, float)), pl.Series("lift_ci_low", np.asarray(lift.ci_low, float)),
        pl.Series("lift_ci_high", np.asarray(lift.ci_high, float)),
    )


def _sequential(frame: pl.DataFrame) -> pl.DataFrame:
    """Raw anytime-valid p, Holm step levels and adjusted p, and the CS at those levels."""
    n = frame.get_column("n_total").to_numpy()
    se2 = frame.get_column("se2").to_numpy()
    diff = frame.get_column("difference").to_numpy()
    tuning = frame.get_column("tuning_n_total").to_numpy()
    comp_alpha = frame.get_column("comparison_alpha").to_numpy()
    rho = optimal_rho(comp_alpha, tuning)
    sigma2 = n * se2
    p_raw = anytime_pvalue(diff, sigma2, n, rho)
    primary = frame.get_column("is_primary").to_numpy()
    level = comp_alpha.copy()
    adjusted = np.full(n.shape, np.nan)
    if primary.any():
        sel = np.flatnonzero(primary)
        fam = _codes(frame[sel], ["experiment_id", "as_of"])
        holm = holm_steps(p_raw[sel], fam, frame.get_column("alpha_share").to_numpy()[sel])
        level[sel] = holm.level
        adjusted[sel] = np.where(np.isnan(p_raw[sel]), np.nan, holm.adjusted)
        size = np.zeros(n.shape, dtype=np.int64)
        size[sel] = holm.family_size
    else:
        size = np.zeros(n.shape, dtype=np.int64)
    hw = cs_halfwidth(sigma2, n, rho, level)
    lo, hi = diff - hw, diff + hw
    binary = frame.get_column("metric_kind").to_numpy() == "binary_proportion"
    lo = np.where(binary, np.clip(lo, -1.0, 1.0), lo)
    hi = np.where(binary, np.clip(hi, -1.0, 1.0), hi)
    return frame.with_columns(
        pl.Series("cs_low", lo), pl.Series("cs_high", hi), pl.Series("cs_level", level),
        pl.Series("cs_p_value", p_raw), pl.Series("cs_p_adjusted", adjusted),
        pl.Series("family_size", np.where(primary, size, 0)),
    )


def _guardrails(frame: pl.DataFrame) -> pl.DataFrame:
    """Per (experiment, night, treatment arm): the first guardrail holding adopt, and a status line."""
    g = frame.filter(pl.col("role") == "guardrail").sort("experiment_id", "as_of", "treatment_arm", "guardrail_order")
    if g.height == 0:
        return pl.DataFrame(schema={"experiment_id": pl.String, "as_of": pl.Date, "treatment_arm": pl.String,
                                    "guardrail_hold": pl.String, "guardrail_status": pl.String})
    b_lo = pl.when(pl.col("sign") > 0).then(pl.col("cs_low")).otherwise(-pl.col("cs_high"))
    g = g.with_columns(b_lo.alias("b_lo")).with_columns(
        # NaN sorts above every number in polars: an undefined CS is explicitly not non-inferior
        (pl.col("b_lo").is_not_nan() & (pl.col("b_lo") > -pl.col("margin"))).fill_null(False).alias("non_inferior"),
    ).with_columns(
        pl.when(pl.col("non_inferior")).then(pl.format(
            "{}: non-inferior (CS lower end {} in the beneficial direction is above -{})",
            "metric", pl.col("b_lo").round_sig_figs(4), pl.col("margin").round_sig_figs(4)))
        .otherwise(pl.format(
            "{}: not shown non-inferior (CS lower end {} in the beneficial direction, margin -{})",
            "metric", pl.col("b_lo").round_sig_figs(4).cast(pl.String).fill_null("undefined"),
            pl.col("margin").round_sig_figs(4))).alias("line"),
    )
    return g.group_by("experiment_id", "as_of", "treatment_arm", maintain_order=True).agg(
        pl.col("metric").filter(~pl.col("non_inferior")).first().alias("failing"),
        pl.col("line").str.join("; ").alias("guardrail_status"),
    ).select(
        "experiment_id", "as_of", "treatment_arm",
        pl.when(pl.col("failing").is_not_null()).then(pl.format("held by guardrail {}", "failing"))
        .otherwise(pl.lit("")).alias("guardrail_hold"),
        "guardrail_status",
    )


def _progress(frame: pl.DataFrame, assigned: pl.DataFrame) -> pl.DataFrame:
    """Assigned units per arm, verified share, information fraction, days to plan, power at the MDE."""
    a = assigned.group_by("experiment_id", "arm", "as_of").agg(pl.col("units").sum())
    frame = frame.join(a.rename({"arm": "treatment_arm", "units": "srm_units_treatment"}),
                       on=["experiment_id", "treatment_arm", "as_of"], how="left")
    frame = frame.join(a.rename({"arm": "control_arm", "units": "srm_units_control"}),
                       on=["experiment_id", "control_arm", "as_of"], how="left")
    frame = frame.with_columns(pl.col("srm_units_treatment").fill_null(0), pl.col("srm_units_control").fill_null(0))
    days = pl.col("days_since_first_assignment")
    rate_t = pl.col("srm_units_treatment") / days
    rate_c = pl.col("srm_units_control") / days
    left_t = (pl.col("planned_n_treatment") - pl.col("srm_units_treatment")).clip(0)
    left_c = (pl.col("planned_n_per_arm") - pl.col("srm_units_control")).clip(0)
    frame = frame.with_columns(
        ((pl.col("n_t") + pl.col("n_c")) / (pl.col("srm_units_treatment") + pl.col("srm_units_control")))
        .alias("verified_share"),
        pl.min_horizontal(pl.col("srm_units_treatment") / pl.col("planned_n_treatment"),
                          pl.col("srm_units_control") / pl.col("planned_n_per_arm")).alias("information_fraction"),
        pl.when(pl.col("plan_reachable") & (days > 0))
        .then(pl.max_horizontal(left_t / rate_t, left_c / rate_c).ceil()).alias("days_to_plan"),
    ).with_columns(
        pl.when(pl.col("days_to_plan").is_infinite() | pl.col("days_to_plan").is_nan())
        .then(None).otherwise(pl.col("days_to_plan")).alias("days_to_plan")
    )
    binary = frame.get_column("plan_metric").to_numpy() == "binary"
    n_c = frame.get_column("n_c").to_numpy().astype(float)
    args = {k: frame.get_column(k).cast(pl.Float64).to_numpy() for k in
            ("mde_signed", "baseline_mean", "comparison_alpha", "ratio", "unit_sd", "inflation")}
    power = np.full(n_c.shape, np.nan)
    for metric, sel in (("binary", binary), ("continuous", ~binary)):
        if sel.any():
            power[sel] = power_at(n_c[sel], args["mde_signed"][sel], args["baseline_mean"][sel],
                                  args["comparison_alpha"][sel], args["ratio"][sel],
                                  baseline_sd=args["unit_sd"][sel] if metric == "continuous" else None,
                                  metric=metric, inflation=args["inflation"][sel])
    return frame.with_columns(pl.when(pl.col("is_primary")).then(pl.Series("power_at_mde", power)).alias("power_at_mde"))


def _fmt(expr: pl.Expr, digits: int = 3) -> pl.Expr:
    return expr.round_sig_figs(digits).cast(pl.String).fill_null("undefined")


def _reasons(frame: pl.DataFrame) -> pl.Expr:
    """The decision's reason in words, with the figures behind it."""
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
    return (
        pl.when(pl.col("decision_rule") == 1).then(
            pl.when(pl.col("registration_refused")).then(pl.col("base_reason"))
            .otherwise(pl.format("invalid since {}: {} (sticky until a reopened event)",
                                 pl.col("invalid_since").cast(pl.String), pl.col("invalid_reason"))))
        .when(pl.col("decision") == "reject").then(pl.format("{} lies entirely on the harmful side of zero ({})", cs, padj))
        .when(pl.col("decision") == "adopt").then(pl.format(
            "{} lies entirely on the beneficial side of zero ({}){}", cs, padj,
            pl.when(pl.col("guardrail_status").is_not_null())
            .then(pl.format("; guardrails: {}", pl.col("guardrail_status"))).otherwise(pl.lit(""))))
        .when(pl.col("decision_rule") == 4).then(pl.format(
            "{} is on the beneficial side of zero ({}), but adopt is {}: {}", cs, padj, pl.col("base_reason"),
            pl.col("guardrail_status")))
        .when(pl.col("decision") == "no_effect").then(pl.format(
            "planned sample reached; {} lies inside (-MDE, +MDE) = (-{}, {})", cs, _fmt(pl.col("mde")), _fmt(pl.col("mde"))))
        .when(pl.col("decision") == "inconclusive").then(pl.format(
            "planned sample reached; {} neither excludes zero nor lies inside (-{}, {})", cs, _fmt(pl.col("mde")),
            _fmt(pl.col("mde"))))
        .when(pl.col("decision_rule") == 2).then(pl.format(
            "{} (units {} / {}; {} days since the first assignment)", pl.col("base_reason"),
            pl.col("n_c").cast(pl.Int64), pl.col("n_t").cast(pl.Int64),
            pl.col("days_since_first_assignment").round(1).cast(pl.String).fill_null("no assignment yet")))
        .when(pl.col("base_reason").str.starts_with("collecting")).then(pl.format("{}; {} includes zero", collecting, cs))
        .otherwise(pl.col("base_reason"))
    )


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
    out_looks = looks.filter(pl.col("output"))
    if out_looks.height == 0 or inputs.comparisons.height == 0:
        return pl.DataFrame(schema=schema)
    seg = inputs.segments
    assigned = dense(inputs.assigned.join(seg, on=["experiment_id", "segment"]),
                     ["experiment_id", "arm", "segment", "epoch"], looks, ["units"])
    assigned = assigned.with_columns(pl.col("units").fill_null(0))
    primary = inputs.experiments.select("experiment_id", pl.col("primary_metric").alias("metric"))
    verified = dense(inputs.arm_stats.join(primary, on=["experiment_id", "metric"]).join(seg, on=["experiment_id", "segment"]),
                     ["experiment_id", "arm", "segment", "epoch"], looks, ["n"]).rename({"n": "units"})
    verified = verified.with_columns(pl.col("units").fill_null(0))
    violations = (
        inputs.violations.sort("day").with_columns(
            pl.col("bad").cum_sum().over(["experiment_id", "epoch"]), pl.col("total").cum_sum().over(["experiment_id", "epoch"]))
    )
    viol = dense(violations, ["experiment_id", "epoch"], looks, ["bad", "total"]).join(
        looks.select("experiment_id", "as_of", pl.col("epoch").alias("e")), on=LOOK
    ).filter(pl.col("epoch") == pl.col("e")).drop("e").with_columns(pl.col("bad").fill_null(0), pl.col("total").fill_null(0))
    drift = looks.select("experiment_id", "as_of", "epoch").join(inputs.drift, on=["experiment_id", "epoch"], how="left") \
        .select(LOOK + [(pl.col("as_of") >= pl.col("drift_day")).fill_null(False).alias("baseline_drift")])
    validity = rule_one(looks, assigned, verified, inputs.shares, inputs.experiments, viol, drift)

    frame = comparisons_at_looks(inputs, out_looks)
    frame = frame.join(out_looks.select("experiment_id", "as_of", "days_since_first_assignment", "status"), on=LOOK)
    frame = frame.join(validity, on=LOOK, how="left")
    both = inputs.both_arms.sort("day").with_columns(pl.col("users").cum_sum().over("experiment_id"))
    frame = frame.join(dense(both, ["experiment_id"], out_looks, ["users"]).rename({"users": "users_in_both_arms"}),
                       on=LOOK, how="left")
    frame = _sequential(frame)
    frame = frame.join(_guardrails(frame), on=["experiment_id", "as_of", "treatment_arm"], how="left")
    frame = _progress(frame, assigned)

    # the rule, on every row (only primary rows keep it)
    def col(name, dtype=float):
        return frame.get_column(name).cast(pl.Float64 if dtype is float else pl.Boolean).to_numpy()

    binary_counts = frame.get_column("binary_metric").to_numpy()
    succ_t, succ_c = col("successes_t"), col("successes_c")
    obs_t, obs_c = col("observations_t"), col("observations_c")
    big = 10.0 * BURN_IN_MIN_COUNT
    v = col("expected_verified_share")
    decision = decide(
        ci_low=col("cs_low"), ci_high=col("cs_high"), mde=col("mde"), n_t=col("n_t"), n_c=col("n_c"),
        n_plan=col("planned_n_per_arm") * v, min_samples=col("min_samples_per_arm"),
        days_since_first_assignment=col("days_since_first_assignment"), direction=col("sign"),
        allocation_ratio=col("ratio"),
        successes_t=np.where(binary_counts, succ_t, big), failures_t=np.where(binary_counts, obs_t - succ_t, big),
        successes_c=np.where(binary_counts, succ_c, big), failures_c=np.where(binary_counts, obs_c - succ_c, big),
        already_invalid=col("invalid", bool) & ~col("registration_refused", bool),
        registration_refused=col("registration_refused", bool),
        plan_reachable=col("plan_reachable", bool),
        guardrail_hold=frame.get_column("guardrail_hold").fill_null("").to_numpy(),
    )
    is_primary = frame.get_column("is_primary").to_numpy()
    frame = frame.with_columns(
        pl.Series("decision", np.where(is_primary, decision.label, None).tolist(), dtype=pl.String),
        pl.Series("base_reason", decision.reason.tolist(), dtype=pl.String),
        pl.Series("decision_rule", np.where(is_primary, decision.rule, 0)).cast(pl.Int64),
    )
    frame = frame.with_columns(
        pl.when(pl.col("is_primary")).then(_reasons(frame)).alias("decision_reason"),
        pl.when(pl.col("is_primary")).then(pl.col("decision_rule")).alias("decision_rule"),
        pl.when(pl.col("is_primary")).then(pl.col("guardrail_status")).alias("guardrail_status"),
        pl.when(pl.col("is_primary")).then(pl.col("invalid_since")).alias("invalid_since"),
    )
    frame = frame.with_columns(
        pl.when(pl.col("binary_metric")).then(pl.col("successes_t")).alias("successes_t"),
        pl.when(pl.col("binary_metric")).then(pl.col("successes_c")).alias("successes_c"),
    )
    frame = frame.rename({"n_c": "n_control", "n_t": "n_treatment", "successes_c": "successes_control",
                          "successes_t": "successes_treatment", "mean_c": "mean_control", "mean_t": "mean_treatment",
                          "var_c": "variance_control", "var_t": "variance_treatment"})
    return frame.select(list(schema)).cast(schema, strict=False).fill_nan(None).sort(
        "as_of", "org_id", "experiment_id", pl.col("role") != "primary", "metric", "metric_kind", "treatment_arm"
    )
