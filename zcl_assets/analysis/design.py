"""What each look compares: registrations and frozen plans to one row per comparison.

Every declared treatment arm is compared with the control arm on:

* the primary metric's primary estimand (role ``primary``: the only one that decides);
* every guardrail (role ``guardrail``: can only hold ``adopt`` back);
* for a user-randomized experiment with several sessions a user, the session-weighted
  ratio of sums beside the per-user mean (role ``secondary``, labelled);
* for an aggregate export, every other metric it carries (role ``secondary``).

Rows come from the registration, not from the data, so a comparison whose arm has no
units yet is still there (nothing vanishes). Vectorised with polars; no loop over
experiments.
"""

from __future__ import annotations

import polars as pl

from zcl_assets.analysis.metrics import (
    RATIO_OF_SUMS,
    counts_successes,
    kind_estimand,
    primary_kind_column,
    several_sessions_a_unit,
)
from zcl_assets.analysis.registration import decode_arms, decode_guardrails, mde_signed, treatment_ratios

COLUMNS = ("cid", "experiment_id", "org_id", "task_type", "source", "metric", "metric_kind", "estimand", "role",
           "is_primary", "direction", "sign", "analysis_unit", "control_arm", "treatment_arm", "mde", "mde_signed",
           "alpha_share", "comparison_alpha", "ratio", "planned_n_per_arm", "planned_n_treatment", "n_fixed_per_arm",
           "plan_reachable", "plan_reason", "tuning_n_total", "min_samples_per_arm", "baseline_mean", "unit_sd",
           "inflation", "cuped_planned_r2", "expected_verified_share", "margin", "guardrail_order", "registration_refused", "allocation",
           "counts_successes")
"""The columns of a comparison row (what ``engine.analyse`` reads of the design)."""


def _registered(registrations: pl.DataFrame, plans: pl.DataFrame, snapshot_metrics: pl.DataFrame) -> pl.DataFrame:
    """One row per registration with its frozen plan, its source and the facts every comparison shares."""
    reg = registrations.join(plans.drop("org_id", "task_type"), on="experiment_id", how="inner")  # pragma: no mutate
    snap = snapshot_metrics.select("experiment_id").unique().with_columns(pl.lit(True).alias("from_snapshots"))
    several = several_sessions_a_unit(pl.col("from_snapshots"))
    reg = reg.join(snap, on="experiment_id", how="left").with_columns(pl.col("from_snapshots").fill_null(False))
    return reg.with_columns(
        several.alias("several"),
        pl.when(pl.col("from_snapshots")).then(pl.lit("arm_snapshots")).otherwise(pl.lit("sessions")).alias("source"),
        pl.when(pl.col("from_snapshots")).then(pl.format("{} (aggregate export)", "randomization_unit"))
        .otherwise(pl.col("randomization_unit")).alias("analysis_unit"),
        mde_signed().alias("mde_signed"),
        (~pl.col("admitted")).alias("registration_refused"),
    )


def _allocation(arms: pl.DataFrame, changed: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, allocation_known, allocation`` (unknown, declared, or declared and changed)."""
    return (
        arms.group_by("experiment_id").agg(pl.col("share").is_not_null().all().alias("allocation_known"))
        .join(changed.select("experiment_id").unique().with_columns(pl.lit(True).alias("changed")), on="experiment_id", how="left")
        .select("experiment_id", "allocation_known",
                pl.when(~pl.col("allocation_known")).then(pl.lit("unknown"))
                .when(pl.col("changed").fill_null(False)).then(pl.lit("declared, changed"))
                .otherwise(pl.lit("declared")).alias("allocation"))
    )


def _roles(base: pl.DataFrame, registrations: pl.DataFrame, snapshot_metrics: pl.DataFrame) -> pl.DataFrame:
    """The metric rows of every (experiment, treatment arm): primary, guardrails and secondaries."""
    no_margin = (pl.lit(None, dtype=pl.Float64).alias("margin"), pl.lit(-1, dtype=pl.Int64).alias("guardrail_order"))
    primary = base.with_columns(
        pl.col("primary_metric").alias("metric"),
        primary_kind_column(pl.col("primary_metric"), pl.col("several")).alias("metric_kind"),
        pl.lit("primary").alias("role"), pl.col("direction").alias("metric_direction"), *no_margin,
    )
    guard = decode_guardrails(registrations).rename({"metric": "g_metric", "direction": "g_direction"})
    guardrails = base.join(guard, on="experiment_id").with_columns(
        pl.col("g_metric").alias("metric"),
        primary_kind_column(pl.col("g_metric"), pl.col("several")).alias("metric_kind"),
        pl.lit("guardrail").alias("role"), pl.col("g_direction").alias("metric_direction"),
    ).drop("g_metric", "g_direction")
    ratio_rows = base.filter(pl.col("several")).with_columns(
        pl.col("primary_metric").alias("metric"), pl.lit(RATIO_OF_SUMS.name).alias("metric_kind"),
        pl.lit("secondary").alias("role"), pl.col("direction").alias("metric_direction"), *no_margin,
    )
    others = snapshot_metrics.join(registrations.select("experiment_id", "primary_metric"), on="experiment_id")
    others = others.filter(pl.col("metric") != pl.col("primary_metric")).select("experiment_id", pl.col("metric").alias("o_metric"))
    secondary = base.join(others, on="experiment_id").with_columns(
        pl.col("o_metric").alias("metric"),
        primary_kind_column(pl.col("o_metric"), pl.lit(False)).alias("metric_kind"),
        pl.lit("secondary").alias("role"), pl.lit("increase").alias("metric_direction"), *no_margin,
    ).drop("o_metric")
    return pl.concat([primary, guardrails, ratio_rows, secondary], how="diagonal_relaxed")


def comparisons(
    registrations: pl.DataFrame,
    plans: pl.DataFrame,
    snapshot_metrics: pl.DataFrame,
    changed: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The comparisons of every registered experiment, and per-experiment facts for rule 1.

    Args:
        registrations: ``sql/select_registrations.sql`` rows.
        plans: ``experiment_plans`` rows (every registration has one, admitted or refused).
        snapshot_metrics: ``experiment_id, metric`` carried by aggregate exports.
        changed: ``experiment_id`` of experiments with a valid declared allocation change.

    Returns:
        ``(comparisons, experiments, arms)``: the comparison rows (:data:`COLUMNS`), one
        row per experiment (``primary_metric, srm_n_star, allocation_known,
        check_verified, source``), and the decoded arms.
    """
    arms = decode_arms(registrations)
    reg = _registered(registrations, plans, snapshot_metrics)
    treatments = treatment_ratios(arms)
    allocation = _allocation(arms, changed)
    base = reg.join(treatments, on="experiment_id").join(allocation, on="experiment_id")
    rows = _roles(base, registrations, snapshot_metrics).with_columns(
        (pl.col("role") == "primary").alias("is_primary"),
        pl.col("metric_direction").alias("direction"),
        pl.when(pl.col("metric_direction") == "decrease").then(-1.0).otherwise(1.0).alias("sign"),
        kind_estimand(pl.col("metric_kind")).alias("estimand"),
        (pl.col("planned_n_per_arm") * pl.col("ratio")).ceil().alias("planned_n_treatment"),
        (pl.col("tuning_n_per_arm") * (1 + pl.col("ratio"))).alias("tuning_n_total"),
        pl.col("reachable").alias("plan_reachable"),
        counts_successes(pl.col("metric")).alias("counts_successes"),
    ).sort("experiment_id", "role", "metric", "metric_kind", "arm_order")
    rows = rows.with_columns(pl.int_range(pl.len()).alias("cid"))
    experiments = (
        reg.join(allocation, on="experiment_id")
        .join(treatments.group_by("experiment_id").agg(pl.col("ratio").sum().alias("sum_ratio")), on="experiment_id")
        .select(
            "experiment_id", "primary_metric", "source", "allocation_known",
            (pl.col("tuning_n_per_arm") * (1 + pl.col("sum_ratio"))).alias("srm_n_star"),
            (pl.col("source") == "sessions").alias("check_verified"),
        )
    )
    return rows.select(COLUMNS), experiments, arms
