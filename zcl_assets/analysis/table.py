"""The last step of the look: the ``experiment_analysis`` rows, with each decision's reason in words.

:func:`table` lays the values of the chain (:class:`Look`) out as the
:data:`~zcl_assets.analysis.schema.EXPERIMENT_ANALYSIS` columns; :func:`reasons` writes the
reason of every primary row from a handful of templates with the figures behind it (each
template formatted on the rows that use it, never a loop over rows).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.analysis.estimate import Estimate, Figures, Nights
from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.quality import Validity
from zcl_assets.analysis.quality import reasons as invalid_reasons
from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS
from zcl_assets.analysis.verdict import Guardrails, Interval, Progress, Sequence
from zcl_assets.stats.decision import Decision


class Look(NamedTuple):
    """Everything the chain computed for each comparison at each output night."""

    nights: Nights
    estimate: Estimate
    figures: Figures
    sequence: Sequence
    interval: Interval
    guardrails: Guardrails
    progress: Progress
    validity: Validity
    decision: Decision


def _since(look: Look, grid: Grid) -> list:
    """The night rule 1 first fired in the epoch, as a date (None where valid)."""
    since = look.validity.invalid_since[look.nights.e, look.nights.d]
    if not (since >= 0).any():
        return [None] * since.size
    base = np.datetime64(grid.day0, "D")
    dates = pl.Series((base + since.astype("timedelta64[D]")).astype("datetime64[D]")).to_list()
    return [s if f >= 0 else None for s, f in zip(dates, since)]


def _columns(look: Look, grid: Grid) -> list[pl.Series]:
    """The figures of every row, by column name (the design columns come with the rows)."""
    at, est, fig, seq, prog, valid, dec = (look.nights, look.estimate, look.figures, look.sequence, look.progress,
                                           look.validity, look.decision)
    desc, lift, e, d = fig.described, fig.lift, at.e, at.d
    counts = at.design.get_column("counts_successes").to_numpy()
    primary_only = np.where(at.design.get_column("is_primary").to_numpy(), dec.label, None)
    return [
        at.as_of.alias("as_of"), pl.Series("days_since_first_assignment", prog.days),
        pl.Series("difference", est.diff), pl.Series("periods", est.periods.astype(np.int64)),
        pl.Series("n_control", est.control.n), pl.Series("n_treatment", est.treatment.n),
        pl.Series("successes_control", np.where(counts, est.control.successes, np.nan)),
        pl.Series("successes_treatment", np.where(counts, est.treatment.successes, np.nan)),
        pl.Series("mean_control", est.mean_c), pl.Series("mean_treatment", est.mean_t),
        pl.Series("variance_control", est.var_c), pl.Series("variance_treatment", est.var_t),
        pl.Series("ci_low", desc.ci_low), pl.Series("ci_high", desc.ci_high), pl.Series("p_value", desc.p_value),
        pl.Series("ci_method", desc.ci_method.tolist(), dtype=pl.String),
        pl.Series("p_method", desc.p_method.tolist(), dtype=pl.String),
        pl.Series("fisher_p_value", desc.fisher_p), pl.Series("fisher_odds_ratio", desc.fisher_or),
        pl.Series("fisher_or_ci_low", desc.fisher_or_low), pl.Series("fisher_or_ci_high", desc.fisher_or_high),
        pl.Series("interval_test_disagree", fig.disagree),
        pl.Series("relative_lift", np.asarray(lift.lift, float)),
        pl.Series("lift_ci_low", np.asarray(lift.ci_low, float)), pl.Series("lift_ci_high", np.asarray(lift.ci_high, float)),
        pl.Series("cs_low", look.interval.low), pl.Series("cs_high", look.interval.high), pl.Series("cs_level", seq.level),
        pl.Series("cs_p_value", seq.pvalue), pl.Series("cs_p_adjusted", seq.adjusted),
        pl.Series("family_size", seq.family_size),
        pl.Series("srm_units_control", prog.assigned_c), pl.Series("srm_units_treatment", prog.assigned_t),
        pl.Series("verified_share", prog.verified_share), pl.Series("information_fraction", prog.information),
        pl.Series("users_in_both_arms", prog.users_in_both),
        pl.Series("days_to_plan", prog.days_to_plan), pl.Series("power_at_mde", prog.power),
        pl.Series("srm_sequential_p", valid.srm_sequential_p[e, d]),
        pl.Series("srm_chisquare_p", valid.srm_chisquare_p[e, d]),
        pl.Series("srm_fired", valid.ever["srm"][e, d]),
        pl.Series("imbalance_p_value", valid.imbalance_p[e, d]),
        pl.Series("contract_violation_share", valid.violation_share[e, d]),
        pl.Series("contract_violation_p", valid.violation_p[e, d]),
        pl.Series("baseline_drift", valid.ever["drift"][e, d]),
        pl.Series("invalid_since", _since(look, grid), dtype=pl.Date),
        pl.Series("invalid_reason", invalid_reasons(valid, e, d), dtype=pl.String),
        pl.Series("decision", primary_only.tolist(), dtype=pl.String),
        pl.Series("base_reason", dec.reason.tolist(), dtype=pl.String),
        pl.Series("decision_rule", dec.rule.astype(np.int64)),
        look.guardrails.status.alias("guardrail_status"),
    ]


def table(look: Look, looks: pl.DataFrame, grid: Grid) -> pl.DataFrame:
    """The :data:`EXPERIMENT_ANALYSIS` rows of the look (all but ``analysed_at``), ordered by
    comparison (experiment, role, metric, kind, arm) and night; ``looks`` gives each night's
    status (``engine.LookInputs.looks``)."""
    schema = EXPERIMENT_ANALYSIS.polars
    at = look.nights
    frame = at.design.with_columns(_columns(look, grid))
    out_looks = looks.filter(pl.col("output")).select("experiment_id", "as_of", "status")
    look_row = np.full(grid.shape, -1, dtype=np.int64)
    look_row[grid.e(out_looks.get_column("experiment_id")), grid.d(out_looks.get_column("as_of"))] = \
        np.arange(out_looks.height)
    frame = frame.with_columns(out_looks.get_column("status").gather(look_row[at.e, at.d])).fill_nan(None)
    frame = frame.with_columns(
        reasons(frame),
        *[pl.when(pl.col("is_primary")).then(pl.col(c)).alias(c)
          for c in ("decision_rule", "guardrail_status", "invalid_since", "power_at_mde")],
    )
    srm_test = pl.when(pl.col("allocation") == "unknown").then(pl.lit("constancy (allocation unknown)")) \
        .otherwise(pl.lit("known allocation (Lindon-Malek)"))
    return frame.with_columns(srm_test.alias("srm_test")).select(list(schema)).cast(schema, strict=False).fill_nan(None)


def _fmt(expr: pl.Expr, digits: int = 3) -> pl.Expr:
    return expr.round_sig_figs(digits).cast(pl.String).fill_null("undefined")


def _templates() -> dict[int, pl.Expr]:
    """The reasons' templates (words with figures), by number."""
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
    mde = _fmt(pl.col("mde"))
    return {
        1: pl.col("base_reason"),
        2: pl.format("invalid since {}: {} (sticky until a reopened event)", pl.col("invalid_since").cast(pl.String),
                     pl.col("invalid_reason")),
        3: pl.format("{} lies entirely on the harmful side of zero ({})", cs, padj),
        4: pl.format("{} lies entirely on the beneficial side of zero ({}){}", cs, padj,
                     pl.when(pl.col("guardrail_status").is_not_null())
                     .then(pl.format("; guardrails: {}", pl.col("guardrail_status"))).otherwise(pl.lit(""))),
        5: pl.format("{} is on the beneficial side of zero ({}), but adopt is {}: {}", cs, padj, pl.col("base_reason"),
                     pl.col("guardrail_status")),
        6: pl.format("planned sample reached; {} lies inside (-MDE, +MDE) = (-{}, {})", cs, mde, mde),
        7: pl.format("planned sample reached; {} neither excludes zero nor lies inside (-{}, {})", cs, mde, mde),
        8: pl.format("{} (units {} / {}; {} days since the first assignment)", pl.col("base_reason"),
                     pl.col("n_control").cast(pl.Int64), pl.col("n_treatment").cast(pl.Int64),
                     pl.col("days_since_first_assignment").round(1).cast(pl.String).fill_null("no assignment yet")),
        9: pl.format("{}; {} includes zero", collecting, cs),
    }


def _template_of() -> pl.Expr:
    """Which template each primary row's reason uses (null: a guardrail or secondary row has none)."""
    return (
        pl.when(~pl.col("is_primary")).then(None)
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


def reasons(frame: pl.DataFrame) -> pl.Series:
    """The decision's reason in words, with the figures behind it, for every primary row."""
    needed = ["base_reason", "invalid_since", "invalid_reason", "cs_level", "cs_low", "cs_high", "cs_p_adjusted",
              "alpha_share", "guardrail_status", "mde", "n_control", "n_treatment", "days_since_first_assignment",
              "plan_reachable", "information_fraction", "days_to_plan", "is_primary", "decision_rule",
              "registration_refused", "decision"]
    keyed = frame.select(needed).with_columns(_template_of().alias("_template"), pl.int_range(pl.len()).alias("_row"))
    parts = [pl.DataFrame(schema={"_row": pl.Int64, "reason": pl.String})]
    for key, template in _templates().items():
        sub = keyed.filter(pl.col("_template") == key)
        if sub.height:
            parts.append(sub.select(pl.col("_row").cast(pl.Int64), template.alias("reason")))
    out = pl.DataFrame({"_row": pl.int_range(frame.height, eager=True).cast(pl.Int64)}).join(
        pl.concat(parts), on="_row", how="left", maintain_order="left")
    return out.get_column("reason").alias("decision_reason")
