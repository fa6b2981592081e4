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
from zcl_assets.analysis.verdict import NOT_CONSTANT, Guardrails, Interval, Progress, Sequence
from zcl_assets.analysis.wording import figure_column, truncated
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


def _dates(positions: np.ndarray, grid: Grid) -> list:
    """Night positions as dates (None where the position is negative)."""
    if not (positions >= 0).any():
        return [None] * positions.size
    base = np.datetime64(grid.day0, "D")
    dates = pl.Series((base + np.maximum(positions, 0).astype("timedelta64[D]")).astype("datetime64[D]")).to_list()
    return [s if f >= 0 else None for s, f in zip(dates, positions)]


def _invalid(look: Look) -> tuple[np.ndarray, list]:
    """The night rule 1 first fired in the epoch (position, -1 where valid) and its words: the
    signals of ``quality.rule_one``, else an empty running intersection (of the comparison or of
    one of its guardrails)."""
    at, valid, interval, held = look.nights, look.validity, look.interval, look.guardrails
    since = valid.invalid_since[at.e, at.d]
    words = invalid_reasons(valid, at.e, at.d)
    own = np.where(interval.empty_since >= 0, interval.empty_since, -1)
    guard = held.empty_since
    empty = np.where((own >= 0) & ((guard < 0) | (own <= guard)), own, guard)
    empty_words = [f"{NOT_CONSTANT} (the running intersection of its confidence sequences is empty)" if own[i] >= 0
                   else f"{NOT_CONSTANT} (the running intersection of a guardrail's confidence sequences is empty)"
                   for i in range(since.size)] if (empty >= 0).any() else [None] * since.size
    out_words = [w if s >= 0 else (empty_words[i] if empty[i] >= 0 else None)
                 for i, (w, s) in enumerate(zip(words, since))]
    return np.where(since >= 0, since, empty), out_words


def _columns(look: Look, grid: Grid) -> list[pl.Series]:
    """The figures of every row, by column name (the design columns come with the rows)."""
    at, est, fig, seq, prog, valid, dec = (look.nights, look.estimate, look.figures, look.sequence, look.progress,
                                           look.validity, look.decision)
    desc, lift, e, d, interval = fig.described, fig.lift, at.e, at.d, look.interval
    counts = at.design.get_column("counts_successes").to_numpy()
    primary_only = np.where(at.design.get_column("is_primary").to_numpy(), dec.label, None)
    invalid_since, invalid_words = _invalid(look)
    return [
        at.as_of.alias("as_of"), pl.Series("days_since_first_assignment", prog.days),
        pl.Series("difference", est.diff), pl.Series("periods", est.periods.astype(np.int64)),
        pl.Series("cuped", est.cuped), pl.Series("variance_reduction", est.variance_reduction),
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
        pl.Series("cs_low", interval.low), pl.Series("cs_high", interval.high),
        pl.Series("cs_night_low", interval.night_low), pl.Series("cs_night_high", interval.night_high),
        pl.Series("cs_looks", interval.looks), pl.Series("cs_since", _dates(interval.since, grid), dtype=pl.Date),
        pl.Series("cs_level", seq.level), pl.Series("cs_p_value", seq.pvalue), pl.Series("cs_p_running", seq.running),
        pl.Series("cs_p_adjusted", seq.adjusted), pl.Series("family_size", seq.family_size),
        pl.Series("epoch", grid.epoch[e, d]),
        pl.Series("guardrail_verdict", look.guardrails.verdict.tolist(), dtype=pl.String),
        pl.Series("srm_units_control", prog.assigned_c), pl.Series("srm_units_treatment", prog.assigned_t),
        pl.Series("verified_share", prog.verified_share), pl.Series("information_fraction", prog.information),
        pl.Series("users_in_both_arms", prog.users_in_both),
        pl.Series("days_to_plan", prog.days_to_plan), pl.Series("power_at_mde", prog.power),
        pl.Series("stalled_since", _dates(prog.stalled_since, grid), dtype=pl.Date),
        pl.Series("srm_sequential_p", valid.srm_sequential_p[e, d]),
        pl.Series("srm_chisquare_p", valid.srm_chisquare_p[e, d]),
        pl.Series("srm_fired", valid.ever["srm"][e, d]),
        pl.Series("imbalance_p_value", valid.imbalance_p[e, d]),
        pl.Series("imbalance_fired", valid.ever["imbalance"][e, d]),
        pl.Series("contract_violation_share", valid.violation_share[e, d]),
        pl.Series("contract_violation_p", valid.violation_p[e, d]),
        pl.Series("contract_violations_fired", valid.ever["violations"][e, d]),
        pl.Series("baseline_drift", valid.ever["drift"][e, d]),
        pl.Series("invalid_since", _dates(invalid_since, grid), dtype=pl.Date),
        pl.Series("invalid_reason", invalid_words, dtype=pl.String),
        pl.Series("decision", primary_only.tolist(), dtype=pl.String),
        pl.Series("base_reason", dec.reason.tolist(), dtype=pl.String),
        pl.Series("decision_rule", dec.rule.astype(np.int64)),
        look.guardrails.status.alias("guardrail_status"),
    ]


def table(look: Look, looks: pl.DataFrame, grid: Grid) -> pl.DataFrame:
    """The :data:`EXPERIMENT_ANALYSIS` rows of the look's output nights (all columns but
    ``analysed_at``), ordered by comparison (experiment, role, metric, kind, arm) and night;
    ``looks`` gives each night's status, epoch start and whether it is output
    (``engine.LookInputs.looks``)."""
    schema = EXPERIMENT_ANALYSIS.polars
    at = look.nights
    frame = at.design.with_columns(_columns(look, grid))
    look_row = np.full(grid.shape, -1, dtype=np.int64)
    look_row[grid.e(looks.get_column("experiment_id")), grid.d(looks.get_column("as_of"))] = np.arange(looks.height)
    gathered = looks.select("status", pl.col("epoch_start").cast(pl.Date), "output").gather(look_row[at.e, at.d])
    frame = frame.with_columns(gathered).filter(pl.col("output")).drop("output").fill_nan(None)
    frame = frame.with_columns(
        reasons(frame),
        *[pl.when(pl.col("is_primary")).then(pl.col(c)).alias(c)
          for c in ("decision_rule", "guardrail_status", "invalid_since", "invalid_reason", "power_at_mde")],
    )
    srm_test = pl.when(pl.col("allocation") == "unknown").then(pl.lit("constancy (allocation unknown)")) \
        .otherwise(pl.lit("known allocation (Lindon-Malek)"))
    return frame.with_columns(srm_test.alias("srm_test")).select(list(schema)).cast(schema, strict=False).fill_nan(None)


def _text(frame: pl.DataFrame) -> pl.DataFrame:
    """The figures the reasons print, as strings to their significant digits (``wording.figures``)."""
    def col(name):
        return frame.get_column(name).cast(pl.Float64).fill_null(np.nan).to_numpy()

    return pl.DataFrame([
        figure_column((1 - col("cs_level")) * 100, "t_level", 4),
        figure_column(col("cs_low"), "t_low", 4), figure_column(col("cs_high"), "t_high", 4),
        figure_column(col("cs_night_low"), "t_night_low", 4), figure_column(col("cs_night_high"), "t_night_high", 4),
        figure_column(col("cs_p_adjusted"), "t_padj"), figure_column(col("alpha_share"), "t_share"),
        figure_column(col("mde"), "t_mde"),
        figure_column(truncated(col("days_since_first_assignment")), "t_days", 3),
        figure_column(col("n_control"), "t_n_c", 12), figure_column(col("n_treatment"), "t_n_t", 12),
        figure_column(np.floor(col("information_fraction") * 100), "t_info", 12),
    ])


def _templates() -> dict[int, pl.Expr]:
    """The reasons' templates (words with figures), by number."""
    looks = pl.when(pl.col("cs_looks") == 1).then(pl.lit("1 look")).otherwise(
        pl.format("{} looks", pl.col("cs_looks").cast(pl.String)))
    cs = pl.format("the {}% confidence sequence [{}, {}] (intersected over {} since {}; tonight's alone [{}, {}])",
                   "t_level", "t_low", "t_high", looks, pl.col("cs_since").cast(pl.String), "t_night_low",
                   "t_night_high")
    padj = pl.format("Holm-adjusted running anytime-valid p = {} against alpha share {}", "t_padj", "t_share")
    plan = pl.format("{}% of the planned sample", "t_info")
    collecting = pl.when(pl.col("stalled_since").is_not_null()).then(
        pl.format("stalled: no new units since {}; {}", pl.col("stalled_since").cast(pl.String), plan)
    ).otherwise(pl.format(
        "collecting{}: {}{}",
        pl.when(pl.col("plan_reachable")).then(pl.lit(""))
        .otherwise(pl.lit(" (the planned sample is unreachable, so only adopt or reject can end it)")),
        plan,
        pl.when(pl.col("days_to_plan").is_not_null())
        .then(pl.format(", about {} more days at the current traffic", pl.col("days_to_plan").cast(pl.Int64)))
        .otherwise(pl.lit("")),
    ))
    assigned = pl.when(pl.col("days_since_first_assignment").is_null()).then(pl.lit("no unit assigned yet")).otherwise(
        pl.format("{} days since the first assignment", "t_days"))
    return {
        1: pl.col("base_reason"),
        2: pl.format("invalid since {}: {} (sticky until a reopened event)", pl.col("invalid_since").cast(pl.String),
                     pl.col("invalid_reason")),
        3: pl.format("{} lies entirely on the harmful side of zero ({})", cs, padj),
        4: pl.format("{} lies entirely on the beneficial side of zero ({}){}", cs, padj,
                     pl.when(pl.col("guardrail_status").is_not_null())
                     .then(pl.format("; guardrails: {}", pl.col("guardrail_status"))).otherwise(pl.lit(""))),
        5: pl.format("{}; {} lies on the beneficial side of zero ({}), and adopt needs every guardrail non-inferior",
                     pl.col("base_reason"), cs, padj),
        6: pl.format("planned sample reached; {} lies inside (-MDE, +MDE) = (-{}, {})", cs, "t_mde", "t_mde"),
        7: pl.format("planned sample reached; {} neither excludes zero nor lies inside (-{}, {})", cs, "t_mde", "t_mde"),
        8: pl.format("{} ({})", pl.col("base_reason"), assigned),
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


def _rests_on() -> pl.Expr:
    """What every decision rests on: its epoch and units."""
    return pl.format("; rests on epoch {} (from {}): {} control and {} treatment units", pl.col("epoch").cast(pl.String),
                     pl.col("epoch_start").cast(pl.String), "t_n_c", "t_n_t")


def reasons(frame: pl.DataFrame) -> pl.Series:
    """The decision's reason in words, with the figures behind it, for every primary row."""
    needed = ["base_reason", "invalid_since", "invalid_reason", "cs_looks", "cs_since", "guardrail_status",
              "days_since_first_assignment", "plan_reachable", "days_to_plan", "stalled_since", "is_primary",
              "decision_rule", "registration_refused", "decision", "epoch", "epoch_start"]
    primary = frame.with_columns(pl.int_range(pl.len()).alias("_row")).filter(pl.col("is_primary"))
    keyed = pl.concat([primary.select(*needed, "_row"), _text(primary)], how="horizontal").with_columns(
        _template_of().alias("_template"))  # only primary rows have a reason: their figures alone are worded
    parts = [pl.DataFrame(schema={"_row": pl.Int64, "reason": pl.String})]
    for key, template in _templates().items():
        sub = keyed.filter(pl.col("_template") == key)
        if sub.height:
            tail = pl.lit("") if key == 1 else _rests_on()
            parts.append(sub.select(pl.col("_row").cast(pl.Int64), pl.concat_str(template, tail).alias("reason")))
    out = pl.DataFrame({"_row": pl.int_range(frame.height, eager=True).cast(pl.Int64)}).join(
        pl.concat(parts), on="_row", how="left", maintain_order="left")
    return out.get_column("reason").alias("decision_reason")
