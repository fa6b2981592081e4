"""The shapes of the analysis tables, written once: polars schema, DuckDB DDL and report columns.

Each table is a tuple of :class:`Column`; the DDL (``CREATE TABLE IF NOT EXISTS``), the polars
schema the look produces and the columns ``zcl report`` shows are all derived from it, so
they cannot drift. ``experiment_analysis`` and ``experiment_plans`` are derived tables: a
warehouse whose copy has another shape (an older version of the project) gets them
recreated, and the next look recomputes every night from the staged data.
``knowledge_records`` is append-only and is never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

_SQL = {
    pl.String: "VARCHAR", pl.Float64: "DOUBLE", pl.Int64: "BIGINT", pl.Boolean: "BOOLEAN",
    pl.Date: "DATE", pl.Datetime("us", "UTC"): "TIMESTAMPTZ",
}


OUTLOOK_DAYS = (14, 28, 56)
"""Horizons of the family outlook: two, four and eight weeks."""

_STORED = {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE"}  # how information_schema spells it


@dataclass(frozen=True)
class Column:
    """One column: name, polars type, whether ``zcl report`` shows it, what it holds."""

    name: str
    dtype: pl.DataType
    doc: str
    report: bool = False
    not_null: bool = False

    @property
    def sql_type(self) -> str:
        return _SQL[self.dtype]


@dataclass(frozen=True)
class TableSchema:
    """A table's columns and the DDL derived from them."""

    name: str
    columns: tuple[Column, ...]
    derived: bool = True  # recreated when its stored shape differs; False: never dropped

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def polars(self) -> dict[str, pl.DataType]:
        """Schema of the frame the code writes (every column but the write timestamp)."""
        return {c.name: c.dtype for c in self.columns if c.name not in ("analysed_at", "planned_at", "recorded_at")}

    @property
    def report_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.report)

    def ddl(self) -> str:
        cols = ",\n    ".join(f'"{c.name}" {c.sql_type}{" NOT NULL" if c.not_null else ""}' for c in self.columns)
        return f"CREATE TABLE IF NOT EXISTS {self.name} (\n    {cols}\n)"

    def ensure(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Create the table; recreate a derived table whose stored shape differs.

        Returns:
            True when the table was (re)created empty.

        Raises:
            RuntimeError: an append-only table exists with another shape (it is never
                dropped; migrate it by hand).
        """
        stored = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",  # pragma: no mutate
            [self.name],
        ).fetchall()
        wanted = [(c.name, _STORED.get(c.sql_type, c.sql_type)) for c in self.columns]
        if stored and [(n, t) for n, t in stored] != wanted:
            if not self.derived:
                raise RuntimeError(f"table {self.name} exists with another shape and is append-only: migrate it by hand")
            con.execute(f"DROP TABLE {self.name}")
            stored = []
        con.execute(self.ddl())
        return not stored


def _c(name, dtype, doc, report=False, not_null=False):  # pragma: no mutate block (runs only at import)
    return Column(name, dtype, doc, report, not_null)


S, F, INT, B, D = pl.String, pl.Float64, pl.Int64, pl.Boolean, pl.Date
T = pl.Datetime("us", "UTC")

EXPERIMENT_ANALYSIS = TableSchema("experiment_analysis", (
    _c("as_of", D, "UTC day of the look (data with event time before the end of that day)", not_null=True),
    _c("experiment_id", S, "experiment", not_null=True),
    _c("org_id", S, "organization", report=True),
    _c("task_type", S, "task type", report=True),
    _c("status", S, "current status: the last experiment event before the look (registered if none)", report=True),
    _c("source", S, "sessions (unit-level data) or arm_snapshots (aggregate export)", report=True),
    _c("metric", S, "metric", report=True),
    _c("metric_kind", S, "binary_proportion, continuous_mean or ratio_of_sums (zcl_assets/analysis/metrics.py)", report=True),
    _c("estimand", S, "the difference estimated, in words", report=True),
    _c("role", S, "primary (decides), guardrail (can hold adopt) or secondary (reported)", report=True),
    _c("is_primary", B, "role = primary", report=True),
    _c("direction", S, "beneficial direction: increase or decrease", report=True),
    _c("analysis_unit", S, "what a unit is: session, user or the export's unit", report=True),
    _c("control_arm", S, "control arm", report=True),
    _c("treatment_arm", S, "treatment arm", report=True),
    _c("decision", S, "adopt, reject, no_effect, inconclusive, continue or invalid (primary rows)", report=True),
    _c("decision_reason", S, "why, in words, with the figures behind it", report=True),
    _c("decision_rule", INT, "rule of DESIGN section 6 that matched (1 to 6)", report=True),
    _c("guardrail_status", S, "primary rows: each guardrail's verdict in words, with its interval and margin", report=True),
    _c("guardrail_verdict", S, "guardrail rows: non-inferior, breached (wholly beyond the margin on the harmful side) "
       "or not yet shown", report=True),
    _c("epoch", INT, "epoch of the look: reopened events before it (only units first assigned in it count)", report=True),
    _c("epoch_start", D, "first day of the epoch (registration, or the reopened event)", report=True),
    _c("cs_low", F, "deciding interval, lower end: the running intersection of the comparison's confidence sequences "
       "over the post-burn-in looks of the epoch (treatment - control), read at cs_level", report=True),
    _c("cs_high", F, "deciding interval, upper end", report=True),
    _c("cs_night_low", F, "tonight's confidence sequence alone, lower end (same level)", report=True),
    _c("cs_night_high", F, "tonight's confidence sequence alone, upper end", report=True),
    _c("cs_looks", INT, "post-burn-in looks of the epoch intersected in the deciding interval", report=True),
    _c("cs_since", D, "first of those looks", report=True),
    _c("cs_level", F, "alpha at which the CS is read: the Holm step of the comparison within its alpha share", report=True),
    _c("cs_p_value", F, "tonight's anytime-valid p-value (raw)", report=True),
    _c("cs_p_running", F, "smallest anytime-valid p over the post-burn-in looks of the epoch (what Holm reads)",
       report=True),
    _c("cs_p_adjusted", F, "Holm-adjusted running anytime-valid p-value (undefined p counted as 1 in the family)",
       report=True),
    _c("alpha_share", F, "the experiment's alpha share (registered alpha / K slots)", report=True),
    _c("family_size", INT, "comparisons in the experiment's Holm family", report=True),
    _c("n_control", INT, "analysed units in control (with a verified value of the metric), of the epoch", report=True),
    _c("n_treatment", INT, "analysed units in treatment", report=True),
    _c("successes_control", INT, "observations with success in control (binary metrics)", report=True),
    _c("successes_treatment", INT, "observations with success in treatment", report=True),
    _c("mean_control", F, "control mean of the unit values (binary: proportion)", report=True),
    _c("mean_treatment", F, "treatment mean", report=True),
    _c("variance_control", F, "per-unit variance in control used by the CS", report=True),
    _c("variance_treatment", F, "per-unit variance in treatment", report=True),
    _c("difference", F, "estimate of the estimand (stratified by period when the allocation changed)", report=True),
    _c("periods", INT, "strata: periods between declared allocation changes and reopen events", report=True),
    _c("cuped", B, "the difference is adjusted for each unit's pre-experiment verified mean (CUPED, Deng et al. 2013)",
       report=True),
    _c("variance_reduction", F, "share of the difference's variance the adjustment removed (null: not adjusted)",
       report=True),
    _c("ci_low", F, "descriptive fixed-horizon 95% interval, lower end", report=True),
    _c("ci_high", F, "descriptive interval, upper end", report=True),
    _c("ci_method", S, "method of the descriptive interval", report=True),
    _c("p_value", F, "descriptive fixed-horizon p-value of the same method", report=True),
    _c("p_method", S, "method of the descriptive p-value", report=True),
    _c("fisher_p_value", F, "Fisher's exact p (small tables only)", report=True),
    _c("fisher_odds_ratio", F, "conditional MLE of the odds ratio (small tables only)"),
    _c("fisher_or_ci_low", F, "conditional odds-ratio interval, lower end"),
    _c("fisher_or_ci_high", F, "conditional odds-ratio interval, upper end"),
    _c("interval_test_disagree", B, "a descriptive interval and test disagree about zero at 5% (e.g. Fisher vs score)", report=True),
    _c("relative_lift", F, "stratified treatment mean / stratified control mean - 1 (the estimate of difference)",
       report=True),
    _c("lift_ci_low", F, "log-scale delta-method 95% interval of the lift, lower end", report=True),
    _c("lift_ci_high", F, "upper end", report=True),
    _c("mde", F, "registered MDE (absolute)", report=True),
    _c("planned_n_per_arm", F, "planned sample of the control arm (randomization units; inf if unreachable)", report=True),
    _c("planned_n_treatment", F, "planned sample of the treatment arm", report=True),
    _c("n_fixed_per_arm", F, "fixed-horizon z-test sample of the control arm"),
    _c("plan_reachable", B, "the plan is reachable (rule 5 can apply)", report=True),
    _c("plan_reason", S, "why the plan is unreachable, and the CS tuning used instead", report=True),
    _c("information_fraction", F, "share of the plan reached: analysed units over the planned units times the expected "
       "verified share (smaller of the two arms; rule 5 at 1)", report=True),
    _c("power_at_mde", F, "power reached for the registered MDE at the current sample (never the observed effect)", report=True),
    _c("days_to_plan", F, "days until both arms reach their plan at the current traffic (none when stalled)", report=True),
    _c("days_since_first_assignment", F, "days from the epoch's first assignment to the end of the look", report=True),
    _c("stalled_since", D, "the last day a unit was first assigned, when none came for 7 days or more (stalled)",
       report=True),
    _c("verified_share", F, "analysed units over assigned units (both arms)", report=True),
    _c("users_in_both_arms", INT, "users with sessions in both arms (session-randomized experiments)", report=True),
    _c("allocation", S, "declared, declared and changed, or unknown (aggregate exports)", report=True),
    _c("srm_test", S, "known allocation (Lindon-Malek) or constancy (allocation unknown)", report=True),
    _c("srm_units_control", INT, "units assigned to control (the SRM counts)", report=True),
    _c("srm_units_treatment", INT, "units assigned to treatment", report=True),
    _c("srm_sequential_p", F, "anytime-valid SRM p-value over every arm of the experiment (running, since the last reopen)", report=True),
    _c("srm_chisquare_p", F, "fixed-horizon chi-square p of the same counts (descriptive)", report=True),
    _c("srm_fired", B, "the sequential SRM test fired (p < 0.01)", report=True),
    _c("imbalance_p_value", F, "anytime-valid test that verified outcomes follow the allocation", report=True),
    _c("imbalance_fired", B, "the outcome imbalance test fired (p < 0.01) since the last reopen", report=True),
    _c("baseline_drift", B, "the control arm's context digest changed since the last reopen", report=True),
    _c("contract_violation_share", F, "quarantined rows of the experiment over all its rows", report=True),
    _c("contract_violation_p", F, "anytime-valid p of: violations exceed 5% of rows", report=True),
    _c("contract_violations_fired", B, "the contract violation test fired (p < 0.01) since the last reopen", report=True),
    _c("invalid_since", D, "first look of the current invalid spell (sticky until a reopen event)", report=True),
    _c("invalid_reason", S, "why the look is invalid (rule 1), in words", report=True),
    _c("analysed_at", T, "when the look was computed", not_null=True),
))

EXPERIMENT_PLANS = TableSchema("experiment_plans", (
    _c("experiment_id", S, "experiment", not_null=True),
    _c("org_id", S, "organization"),
    _c("task_type", S, "task type"),
    _c("admitted", B, "got an alpha slot (False: refused and quarantined, stage registration)"),
    _c("alpha_slot", INT, "slot 1..K of its organization and task type"),
    _c("alpha_slots", INT, "K, the family's concurrent slots"),
    _c("alpha_share", F, "registered alpha / K: used by the plan, the CS and the Holm step"),
    _c("n_comparisons", INT, "treatment arms compared with control (the Holm family)"),
    _c("comparison_alpha", F, "alpha_share / n_comparisons: the plan's and the CS tuning's level"),
    _c("metric_kind", S, "kind of the primary estimand"),
    _c("estimand", S, "primary estimand in words"),
    _c("planned_unit", S, "what the plan counts: sessions or users"),
    _c("allocation_known", B, "the registration declares the allocation"),
    _c("planned_n_per_arm", F, "planned units of the control arm (inf when unreachable)"),
    _c("n_fixed_per_arm", F, "fixed-horizon z-test units of the control arm"),
    _c("tuning_n_per_arm", F, "control units at which the CS is tuned (the plan, or the stated fallback)"),
    _c("planned_units", S, "JSON: planned units per arm"),
    _c("inflation", F, "R, the CS inflation"),
    _c("design_effect", F, "design effect of a user-randomized plan from the family's history (1 + (m - 1) ICC); 1 otherwise"),
    _c("unit_sd", F, "sd of the unit's value the plan assumes (per-user mean for a user-randomized one)"),
    _c("variance_basis", S, "where that variance comes from: the registered sd, the family's history, or the bound p(1 - p)"),
    _c("cuped", B, "the look adjusts for each unit's pre-experiment verified mean (CUPED): asked for and the family has history"),
    _c("covariate_window_days", INT, "days before the first assignment whose verified sessions give a unit's covariate"),
    _c("cuped_r2", F, "rho^2: share of the unit value's variance the covariate explained in the family's history "
                      "(success primaries; null: not measured)"),
    _c("cuped_planned_r2", F, "the variance reduction the planned sample counts on: a lower 90% confidence bound of "
                              "cuped_r2 (Olkin and Finn 1995); 0 where CUPED does not apply"),
    _c("cuped_basis", S, "what the plan counts on from CUPED and why, in words"),
    _c("verified_share", F, "expected verified share v"),
    _c("n_guardrails", INT, "guardrails sharing the type II error"),
    _c("reachable", B, "the plan is reachable"),
    _c("plan_reason", S, "why not, and the fallback tuning"),
    _c("traffic_per_day", F, "units a day of the family before registration (null: no history)"),
    _c("days_to_plan", F, "days to reach the plan at that traffic, shared among the family's experiments"),
    _c("policy_version", S, "version of the registration policy"),
    _c("planned_at", T, "when the plan was frozen", not_null=True),
), derived=True)

FAMILY_OUTLOOK = TableSchema("family_outlook", (
    _c("as_of", D, "the night", not_null=True),
    _c("org_id", S, "organization", not_null=True),
    _c("task_type", S, "task type", not_null=True),
    _c("traffic_per_day", F, "sessions a day in the 28 days before the end of the night"),
    _c("verified_share", F, "share of those sessions with an authoritative outcome"),
    _c("baseline", F, "success rate of the verified ones: the baseline a new experiment would register"),
    _c("alpha_slots", INT, "K, the family's concurrent slots"),
    _c("slot_free", B, "a registration tonight would get a slot"),
    _c("next_free_slot", D, "when no slot is free: the day the first live experiment should reach its plan "
       "(none when no end is known or every end falls after 9999)"),
    _c("experiments_sharing", INT, "experiments that would share the traffic, the new one included"),
    _c("comparison_alpha", F, "the level a new one-treatment experiment would plan at (alpha / K)"),
    _c("inflation", F, "R at that level and power 0.8"),
    *(_c(f"units_per_arm_{d}d", F, f"control units a new experiment reaches in {d} days at its share of the traffic")
      for d in OUTLOOK_DAYS),
    *(_c(f"mde_{d}d", F, f"smallest increase in the success rate whose plan is reached in {d} days (null: none)")
      for d in OUTLOOK_DAYS),
), derived=True)

SEGMENT_BREAKDOWNS = TableSchema("segment_breakdowns", (
    _c("as_of", D, "the night", not_null=True),
    _c("experiment_id", S, "experiment", not_null=True),
    _c("control_arm", S, "control arm"),
    _c("treatment_arm", S, "treatment arm"),
    _c("metric", S, "the primary metric broken down"),
    _c("dimension", S, "what the sessions are broken down by: model or budget"),
    _c("segment", S, "the model or budget ('(none)': not recorded)"),
    _c("n_control", INT, "verified control sessions in the segment with a value of the metric"),
    _c("x_control", INT, "their successes (a rate; null for a continuous metric)"),
    _c("n_treatment", INT, "verified treatment sessions in the segment with a value of the metric"),
    _c("x_treatment", INT, "their successes (a rate; null for a continuous metric)"),
    _c("mean_control", F, "control mean of the metric in the segment (a rate: the success rate), capped"),
    _c("mean_treatment", F, "treatment mean of the metric in the segment"),
    _c("sd_control", F, "control sample sd of the metric in the segment (continuous metrics)"),
    _c("sd_treatment", F, "treatment sample sd of the metric in the segment (continuous metrics)"),
    _c("difference", F, "treatment minus control"),
    _c("ci_low", F, "95% interval, lower end (descriptive): Miettinen-Nurminen score for a rate, Welch t otherwise"),
    _c("ci_high", F, "upper end"),
    _c("p", F, "p of the same test (Miettinen-Nurminen score or Welch t), unadjusted"),
    _c("p_bh", F, "Benjamini-Hochberg adjusted p across the segments of the comparison and dimension"),
    _c("label", S, "exploratory: never a decision"),
    _c("method", S, "the methods, named"),
), derived=True)

KNOWLEDGE_RECORDS = TableSchema("knowledge_records", (
    _c("record_id", S, "digest of the record's identity", not_null=True),
    _c("sequence", INT, "position of the record in its comparison's chain (1, 2, ...)", not_null=True),
    _c("experiment_id", S, "experiment", not_null=True),
    _c("org_id", S, "organization"),
    _c("task_type", S, "task type"),
    _c("metric", S, "primary metric"),
    _c("control_arm", S, "control arm"),
    _c("treatment_arm", S, "treatment arm"),
    _c("claim", S, "adopt, reject, no_effect, or withdrawn (an invalid look)", not_null=True),
    _c("statement", S, "the claim in words, with its interval"),
    _c("look_as_of", D, "the look that supports the claim", not_null=True),
    _c("decision_reason", S, "the look's reason"),
    _c("cs_low", F, "CS lower end at that look"),
    _c("cs_high", F, "CS upper end at that look"),
    _c("cs_p_adjusted", F, "Holm-adjusted anytime-valid p at that look"),
    _c("evaluators", S, "JSON: evaluator id, version and kind of the verified outcomes behind it"),
    _c("citations", S, "JSON: experiment, look, analysis row key and source"),
    _c("evidence_digest", S, "sha256 of the look's evidence fields"),
    _c("supersedes", S, "record_id this record supersedes (null for the first)"),
    _c("policy_version", S, "version of the promotion gate"),
    _c("recorded_at", T, "when the record was appended", not_null=True),
), derived=False)
