"""One look at every experiment: per-arm statistics to comparisons (treatment vs control).

Takes the few numbers per arm that SQL aggregated (``sql/aggregate_arm_statistics.sql``,
``sql/select_snapshot_statistics.sql``) and returns one row per experiment, metric and
comparison, vectorised over all comparisons at once. Descriptive methods (labelled as such):

- binary metric, unit-level data: Fisher's exact p-value (``p_method = fisher_exact``) with
  the Newcombe hybrid score interval for the difference; the Miettinen-Nurminen score
  interval and p-value beside them. A Fisher p and a Newcombe interval can disagree on small
  tables; ``interval_test_disagree`` flags it.
- continuous metric: Welch t-test and interval.
- user-randomized experiments with several sessions per unit: delta method on per-user sums
  (Deng, Lu, Litz 2018) for the ratio metric, normal interval and p-value.
- relative lift with a log-scale delta-method interval; SRM on units (chi-square and the
  sequential test of Lindon and Malek 2022); the anytime-valid confidence sequence, tuned at
  the planned sample, which is the interval the decision rule will read.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from zcl_assets.stats.binary import fisher_exact, miettinen_nurminen, newcombe_interval
from zcl_assets.stats.clustering import RatioResult, delta_method_difference, delta_method_mean
from zcl_assets.stats.continuous import welch
from zcl_assets.stats.lift import relative_lift
from zcl_assets.stats.sequential import confidence_sequence
from zcl_assets.stats.srm import srm_chisquare, srm_sequential

BINARY_METRICS = frozenset({"success"})

ANALYSIS_SCHEMA: dict[str, pl.DataType] = {
    "experiment_id": pl.String,
    "org_id": pl.String,
    "task_type": pl.String,
    "source": pl.String,
    "metric": pl.String,
    "is_primary": pl.Boolean,
    "direction": pl.String,
    "analysis_unit": pl.String,
    "control_arm": pl.String,
    "treatment_arm": pl.String,
    "n_control": pl.Int64,
    "n_treatment": pl.Int64,
    "successes_control": pl.Int64,
    "successes_treatment": pl.Int64,
    "mean_control": pl.Float64,
    "mean_treatment": pl.Float64,
    "variance_control": pl.Float64,
    "variance_treatment": pl.Float64,
    "difference": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "ci_method": pl.String,
    "p_value": pl.Float64,
    "p_method": pl.String,
    "interval_test_disagree": pl.Boolean,
    "mn_p_value": pl.Float64,
    "mn_ci_low": pl.Float64,
    "mn_ci_high": pl.Float64,
    "relative_lift": pl.Float64,
    "lift_ci_low": pl.Float64,
    "lift_ci_high": pl.Float64,
    "cs_low": pl.Float64,
    "cs_high": pl.Float64,
    "cs_p_value": pl.Float64,
    "planned_n_per_arm": pl.Float64,
    "n_fixed_per_arm": pl.Float64,
    "plan_reason": pl.String,
    "srm_units_control": pl.Int64,
    "srm_units_treatment": pl.Int64,
    "srm_chisquare_p": pl.Float64,
    "srm_sequential_p": pl.Float64,
}


def build_comparisons(
    registrations: pl.DataFrame,
    plans: pl.DataFrame,
    arm_statistics: pl.DataFrame,
    assigned_units: pl.DataFrame,
    alpha_column: str = "alpha",
) -> pl.DataFrame:
    """Comparisons of every treatment arm with its control, for every analysed metric.

    Args:
        registrations: one row per experiment (``sql/select_registrations.sql``).
        plans: ``experiment_id, planned_n_per_arm, n_fixed_per_arm, plan_reason, allocation_ratio``
            (the control arm's planned sample and the planned treatment-to-control ratio).
        arm_statistics: one row per experiment, arm and metric with ``source`` ('sessions' or
            'arm_snapshots'), ``analysis_unit``, ``n`` (units), ``mean``, ``variance`` (sample
            variance of the unit values, NULL for ratio metrics), ``successes`` (binary) and,
            for ratio metrics, ``sum_y, sum_y2, sum_m, sum_m2, sum_ym``.
        assigned_units: ``experiment_id, arm, units`` (for SRM; may be empty for snapshots,
            whose counts then come from ``arm_statistics`` of the primary metric).
        alpha_column: the registration column holding the experiment's alpha.

    Returns:
        A frame with ``ANALYSIS_SCHEMA`` columns; intervals are two-sided at 95%, the
        confidence sequence at the experiment's alpha. Undefined figures are null.
    """
    pairs = _pairs(registrations, arm_statistics)
    if pairs.height == 0:
        return pl.DataFrame(schema=ANALYSIS_SCHEMA)
    pairs = pairs.join(plans, on="experiment_id", how="left")
    pairs = _add_srm(pairs, registrations, assigned_units, arm_statistics)

    out = {name: np.full(pairs.height, np.nan) for name in (
        "difference", "ci_low", "ci_high", "p_value", "mn_p_value", "mn_ci_low", "mn_ci_high")}
    ci_method = np.array([""] * pairs.height, dtype=object)
    p_method = np.array([""] * pairs.height, dtype=object)

    def col(name: str) -> np.ndarray:
        return pairs.get_column(name).cast(pl.Float64).to_numpy()

    n_t, n_c = col("n_t"), col("n_c")
    mean_t, mean_c = col("mean_t"), col("mean_c")
    var_t, var_c = col("var_t"), col("var_c")
    binary = pairs.get_column("metric").is_in(list(BINARY_METRICS)).to_numpy()
    ratio = pairs.get_column("is_ratio").to_numpy()

    unit_binary = binary & ~ratio
    if unit_binary.any():
        i = unit_binary
        x_t, x_c = col("successes_t")[i], col("successes_c")[i]
        fisher = fisher_exact(x_t, n_t[i], x_c, n_c[i], interval=False)
        newcombe = newcombe_interval(x_t, n_t[i], x_c, n_c[i])
        mn = miettinen_nurminen(x_t, n_t[i], x_c, n_c[i])
        out["difference"][i] = newcombe.diff
        out["ci_low"][i], out["ci_high"][i] = newcombe.ci_low, newcombe.ci_high
        out["p_value"][i] = fisher.pvalue
        out["mn_p_value"][i], out["mn_ci_low"][i], out["mn_ci_high"][i] = mn.pvalue, mn.ci_low, mn.ci_high
        ci_method[i], p_method[i] = "newcombe_hybrid_score", "fisher_exact"

    continuous = ~binary & ~ratio
    if continuous.any():
        i = continuous
        result = welch(n_t[i], mean_t[i], var_t[i], n_c[i], mean_c[i], var_c[i])
        out["difference"][i] = result.diff
        out["ci_low"][i], out["ci_high"][i], out["p_value"][i] = result.ci_low, result.ci_high, result.pvalue
        ci_method[i], p_method[i] = "welch", "welch_t"

    if ratio.any():
        i = ratio
        t = delta_method_mean(*(col(f"{c}_t")[i] for c in ("n", "sum_y", "sum_y2", "sum_m", "sum_m2", "sum_ym")))
        c = delta_method_mean(*(col(f"{c}_c")[i] for c in ("n", "sum_y", "sum_y2", "sum_m", "sum_m2", "sum_ym")))
        result = delta_method_difference(t, c)
        out["difference"][i] = result.diff
        out["ci_low"][i], out["ci_high"][i], out["p_value"][i] = result.ci_low, result.ci_high, result.pvalue
        ci_method[i], p_method[i] = "delta_method_per_user_sums", "delta_method_z"
        var_t[i], var_c[i] = _unit_variance(t), _unit_variance(c)

    lift = relative_lift(mean_t, var_t, n_t, mean_c, var_c, n_c)
    alpha = col(alpha_column)
    planned = col("planned_n_per_arm")
    ratio_planned = col("allocation_ratio")
    cs = confidence_sequence(
        n_t, mean_t, var_t, n_c, mean_c, var_c, alpha,
        np.where(np.isfinite(planned), planned, np.nan),
        allocation_ratio=np.where(np.isfinite(ratio_planned), ratio_planned, 1.0),
    )
    excludes_zero = (out["ci_low"] > 0) | (out["ci_high"] < 0)
    disagree = np.where(np.isnan(out["p_value"]) | np.isnan(out["ci_low"]), False, excludes_zero != (out["p_value"] < 0.05))

    frame = pairs.select(
        "experiment_id", "org_id", "task_type", "source", "metric", "is_primary", "direction", "analysis_unit",
        "control_arm", "treatment_arm",
        pl.col("n_c").cast(pl.Int64).alias("n_control"), pl.col("n_t").cast(pl.Int64).alias("n_treatment"),
        pl.col("successes_c").cast(pl.Int64).alias("successes_control"),
        pl.col("successes_t").cast(pl.Int64).alias("successes_treatment"),
        pl.col("mean_c").alias("mean_control"), pl.col("mean_t").alias("mean_treatment"),
        "planned_n_per_arm", "n_fixed_per_arm", "plan_reason",
        "srm_units_control", "srm_units_treatment", "srm_chisquare_p", "srm_sequential_p",
    ).with_columns(
        pl.Series("variance_control", var_c), pl.Series("variance_treatment", var_t),
        *(pl.Series(name, values) for name, values in out.items()),
        pl.Series("ci_method", ci_method.tolist(), dtype=pl.String),
        pl.Series("p_method", p_method.tolist(), dtype=pl.String),
        pl.Series("interval_test_disagree", disagree),
        pl.Series("relative_lift", np.asarray(lift.lift, dtype=float)),
        pl.Series("lift_ci_low", np.asarray(lift.ci_low, dtype=float)),
        pl.Series("lift_ci_high", np.asarray(lift.ci_high, dtype=float)),
        pl.Series("cs_low", np.asarray(cs.ci_low, dtype=float)),
        pl.Series("cs_high", np.asarray(cs.ci_high, dtype=float)),
        pl.Series("cs_p_value", np.asarray(cs.pvalue, dtype=float)),
    )
    return frame.select(list(ANALYSIS_SCHEMA)).cast(ANALYSIS_SCHEMA).fill_nan(None)


def _unit_variance(r: RatioResult) -> np.ndarray:
    """Per-unit variance implied by the delta-method variance of a ratio mean (var * n)."""
    return np.asarray(r.variance, dtype=float) * np.asarray(r.n_users, dtype=float)


def _pairs(registrations: pl.DataFrame, stats: pl.DataFrame) -> pl.DataFrame:
    """(experiment, metric, treatment arm) rows with control and treatment statistics."""
    if stats.height == 0:
        return pl.DataFrame()
    reg = registrations.with_columns(
        pl.col("guardrails").map_elements(lambda g: [x["metric"] for x in json.loads(g or "[]")], return_dtype=pl.List(pl.String)).alias("guardrail_metrics")
    ).select("experiment_id", "org_id", "task_type", "control_arm", "primary_metric", "direction", "alpha", "guardrail_metrics")
    missing = [c for c in ("successes", "sum_y", "sum_y2", "sum_m", "sum_m2", "sum_ym") if c not in stats.columns]
    stats = stats.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in missing)
    stats = stats.with_columns(pl.col("sum_y").is_not_null().alias("is_ratio"))
    joined = stats.join(reg, on="experiment_id", how="inner")
    # Sessions experiments analyse the primary metric and the guardrails; snapshot sources
    # analyse every metric they carry.
    joined = joined.filter(
        (pl.col("source") == "arm_snapshots")
        | (pl.col("metric") == pl.col("primary_metric"))
        | pl.col("guardrail_metrics").list.contains(pl.col("metric"))
    )
    value_cols = ["n", "mean", "variance", "successes", "sum_y", "sum_y2", "sum_m", "sum_m2", "sum_ym", "is_ratio", "analysis_unit", "source"]
    control = joined.filter(pl.col("arm") == pl.col("control_arm")).select(
        "experiment_id", "metric", *[pl.col(c).alias(f"{c}_c") for c in value_cols]
    )
    treatment = joined.filter(pl.col("arm") != pl.col("control_arm"))
    pairs = treatment.join(control, on=["experiment_id", "metric"], how="inner")
    return pairs.select(
        "experiment_id", "org_id", "task_type", "source", "metric", "direction", "alpha", "analysis_unit", "control_arm",
        pl.col("arm").alias("treatment_arm"),
        (pl.col("metric") == pl.col("primary_metric")).alias("is_primary"),
        (pl.col("is_ratio") | pl.col("is_ratio_c")).alias("is_ratio"),
        *[pl.col(c).alias(f"{c}_t") for c in value_cols if c not in ("is_ratio", "analysis_unit", "source")],
        *[f"{c}_c" for c in value_cols if c not in ("is_ratio", "analysis_unit", "source")],
        pl.col("n").alias("n_for_srm_t"), pl.col("n_c").alias("n_for_srm_c"),
    ).rename({"variance_t": "var_t", "variance_c": "var_c"}).sort("experiment_id", "metric", "treatment_arm")


def _allocation_json(arms: str) -> str:
    """``{arm name: allocation share}`` as JSON text, from a registration's arms."""
    return json.dumps({arm["name"]: float(arm["allocation"]) for arm in json.loads(arms)})


def _add_srm(pairs: pl.DataFrame, registrations: pl.DataFrame, assigned: pl.DataFrame, stats: pl.DataFrame) -> pl.DataFrame:
    """Sample-ratio tests on units, per comparison, against the registered allocation shares.

    Counts are units assigned (``assigned``); snapshot sources, which carry no assignments,
    use the unit counts of their arm statistics (the same for every metric).
    """
    shares = registrations.select(
        "experiment_id",
        pl.col("arms").map_elements(_allocation_json, return_dtype=pl.String).alias("shares"),
    )
    units = assigned.select("experiment_id", "arm", pl.col("units").cast(pl.Int64))
    snapshot_units = stats.filter(pl.col("source") == "arm_snapshots").group_by("experiment_id", "arm").agg(pl.col("n").max().cast(pl.Int64).alias("units"))
    units = pl.concat([units, snapshot_units.join(units, on=["experiment_id", "arm"], how="anti")])
    pairs = pairs.join(shares, on="experiment_id", how="left")
    pairs = pairs.join(units.rename({"arm": "treatment_arm", "units": "srm_units_treatment"}), on=["experiment_id", "treatment_arm"], how="left")
    pairs = pairs.join(units.rename({"arm": "control_arm", "units": "srm_units_control"}), on=["experiment_id", "control_arm"], how="left")
    counts = np.stack([pairs.get_column("srm_units_treatment").cast(pl.Float64).to_numpy(), pairs.get_column("srm_units_control").cast(pl.Float64).to_numpy()], axis=-1)
    share_pairs = np.array([
        [json.loads(s)[t], json.loads(s)[c]] if s else [np.nan, np.nan]
        for s, t, c in zip(pairs.get_column("shares").to_list(), pairs.get_column("treatment_arm").to_list(), pairs.get_column("control_arm").to_list())
    ], dtype=float).reshape(-1, 2)
    share_pairs = share_pairs / share_pairs.sum(axis=-1, keepdims=True)
    valid = np.isfinite(counts).all(axis=-1) & np.isfinite(share_pairs).all(axis=-1)
    chi_p = np.full(pairs.height, np.nan)
    seq_p = np.full(pairs.height, np.nan)
    if valid.any():
        chi_p[valid] = srm_chisquare(counts[valid], share_pairs[valid]).pvalue
        seq_p[valid] = srm_sequential(counts[valid], share_pairs[valid]).pvalue
    return pairs.with_columns(pl.Series("srm_chisquare_p", chi_p), pl.Series("srm_sequential_p", seq_p)).drop("shares")
