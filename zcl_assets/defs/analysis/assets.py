"""Nightly assets: verification records, the experience fact table, frozen plans, the look, knowledge."""

import datetime as dt

import dagster as dg
import polars as pl

from contracts.evaluation import load_evaluation_contracts
from resources import ComputeEngine, Warehouse
from sql import load_sql
from zcl_assets.analysis.breakdowns import segment_breakdowns as breakdowns_of
from zcl_assets.analysis.breakdowns import segment_counts
from zcl_assets.analysis.knowledge import GATE_VERSION, cited_looks, promote
from zcl_assets.analysis.look import take_looks
from zcl_assets.analysis.planner import family_outlook as outlook_of_families
from zcl_assets.analysis.registration import (
    DEFAULT_ALPHA_SLOTS,
    RegistrationPolicy,
    allocation_changes,
    decode_arms,
    plan_registrations,
    refusal_quarantine,
)
from zcl_assets.analysis.schema import (
    EXPERIMENT_ANALYSIS,
    EXPERIMENT_PLANS,
    FAMILY_OUTLOOK,
    KNOWLEDGE_RECORDS,
    SEGMENT_BREAKDOWNS,
)
from zcl_assets.defs.analysis import checks
from zcl_assets.experience.build import build_experience, build_verification_records
from zcl_assets.experience.days import update_experience_days
from zcl_assets.ingest import changelog
from zcl_assets.reports.markdown import markdown_table
from zcl_assets.warehouse import transaction

STAGED = [dg.AssetKey(f"staged_{t}") for t in ("experiments", "sessions", "assignments", "outcomes")]


class LookConfig(dg.Config):
    """Which night to look at: ``as_of`` is a UTC day (``YYYY-MM-DD``); empty means today."""

    as_of: str = ""

    def day(self) -> str:
        return self.as_of or dt.datetime.now(dt.timezone.utc).date().isoformat()


@dg.asset(
    deps=[dg.AssetKey("staged_outcomes"), dg.AssetKey("staged_sessions")],
    group_name="experience",
    kinds={"duckdb"},
    pool="duckdb",
)
def verification_records(context: dg.AssetExecutionContext, warehouse: Warehouse, engine: ComputeEngine) -> dg.MaterializeResult:
    """Every staged outcome judged by its task type's evaluation contract (contracts/evaluation/*.yaml):
    who decided it (evaluator id, version, kind) and whether that kind is authoritative. Non-authoritative
    outcomes are kept and counted, never used for decisions. A night rebuilds the records of the sessions
    whose outcomes or session rows changed."""
    with warehouse.connect() as con:
        rebuilt = build_verification_records(con, load_evaluation_contracts(), engine.open(warehouse))
        counts = con.execute(
            "SELECT evaluator_kind, authoritative, count(*) AS outcomes FROM verification_records GROUP BY ALL ORDER BY ALL"
        ).pl()
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(counts.get_column("outcomes").sum() or 0),
            "authoritative": int(counts.filter(pl.col("authoritative")).get_column("outcomes").sum() or 0),
            "by_kind": dg.MetadataValue.md(markdown_table(counts)),
            "rebuilt": rebuilt,
            "engine": engine.engine,
        }
    )


@dg.asset(
    deps=[verification_records, *STAGED],
    group_name="experience",
    kinds={"duckdb"},
    pool="duckdb",
    check_specs=[checks.ASSIGNMENT_CONSERVATION],
)
def experience(context: dg.AssetExecutionContext, warehouse: Warehouse, engine: ComputeEngine) -> dg.MaterializeResult:
    """The analysis fact table: one row per (experiment, session) with its arm, unit and verified
    outcome. Assignments whose session is missing or delivered another arm, units assigned to several
    arms or contaminated by such a row (user-randomized), and repeated units of unit-level experiments
    go to `quarantine` (stage `experience`) with the rule and reason. A night rebuilds the rows of the
    sessions and units its changes touch."""
    with warehouse.connect() as con:
        rebuilt = build_experience(con, load_evaluation_contracts(), engine.open(warehouse))
        update_experience_days(con)
        excluded = con.execute(
            "SELECT rule, count(*) AS rows FROM quarantine WHERE stage = 'experience' GROUP BY ALL ORDER BY ALL"
        ).pl()
        kept = con.execute("SELECT count(*) FROM experience").fetchone()[0]
        conserved = checks.assignment_conservation(con)
    by_rule = pl.concat([excluded, pl.DataFrame({"rule": ["kept"], "rows": [kept]})], how="vertical_relaxed")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(kept),
            "assignments_by_rule": dg.MetadataValue.md(markdown_table(by_rule)),
            "rebuilt": rebuilt,
            "engine": engine.engine,
        },
        check_results=[conserved],
    )


class PlanConfig(dg.Config):
    """Registration policy: ``alpha_slots`` (K) concurrent experiments per organization and task type."""

    alpha_slots: int = DEFAULT_ALPHA_SLOTS


PLANS_FINGERPRINT = "experiment_plans: families of corrected registrations planned again"
"""The version of how plans follow corrected registrations (the change log's cursor of ``experiment_plans``).
No plan is replaced on the first read of the log (no cursor yet): plans made before keep their values."""


def _plans_to_replace(con) -> changelog.Changes:
    """Temp table ``replaced_plans``: the plans of each organization and task type whose planned
    registrations or their lifecycle events changed (corrected, removed, or re-staged with their day;
    before and after a move to another family), or whose plans a registration without a plan precedes
    (it landed late): the family is planned again in registration order, as a first load of the same
    files plans it. Returns the changes read."""
    changes = changelog.changes_since(con, "experiment_plans", PLANS_FINGERPRINT)
    changed = "SELECT experiment_id FROM experiment_plans WHERE false" if changes.full else (
        f"SELECT experiment_id FROM {changes.relation}")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE replaced_plans AS WITH planned AS ("
        "  SELECT s.* FROM staged_experiments s SEMI JOIN experiment_plans p USING (experiment_id)"
        "), families AS ("
        f"  SELECT org_id, task_type FROM experiment_plans WHERE experiment_id IN ({changed})"
        f"  UNION SELECT org_id, task_type FROM planned WHERE experiment_id IN ({changed})"
        "  UNION SELECT n.org_id, n.task_type FROM staged_experiments n JOIN planned s USING (org_id, task_type)"
        "  WHERE n.experiment_id NOT IN (SELECT experiment_id FROM experiment_plans)"
        "    AND (n.registered_at, n.experiment_id) < (s.registered_at, s.experiment_id)"
        ") SELECT p.experiment_id FROM experiment_plans p SEMI JOIN families f USING (org_id, task_type)"
    )
    return changes


@dg.asset(
    deps=[dg.AssetKey("staged_experiments"), dg.AssetKey("staged_experiment_events"), dg.AssetKey("staged_sessions"),
          dg.AssetKey("staged_arm_snapshots"), verification_records],
    group_name="analysis",
    kinds={"duckdb", "scipy"},
    pool="duckdb",
)
def experiment_plans(context: dg.AssetExecutionContext, config: PlanConfig, warehouse: Warehouse) -> dg.MaterializeResult:
    """Frozen at registration, once per experiment (a corrected, removed or late registration, or a corrected
    lifecycle event, plans its organization and task type again, in registration order, as a first load of
    the same files would): its alpha slot in its organization and task type (K
    concurrent, default 4; a registration beyond K is refused and quarantined, stage `registration`), its
    alpha share (alpha / K, used by the plan, the confidence sequence and the Holm step), and the planned
    sample in randomization units for the deciding confidence sequence (R x DE x n_fixed / v, never below
    the minimum), with the days to reach it at the family's traffic. An unreachable plan says why and
    names the fallback tuning of its confidence sequence. Declared allocation changes that cannot be
    stratified are quarantined here too."""
    policy = RegistrationPolicy(alpha_slots=config.alpha_slots)
    with warehouse.connect() as con:
        EXPERIMENT_PLANS.ensure(con)
        changes = _plans_to_replace(con)
        registrations = con.execute(load_sql("select_registrations")).pl()
        existing = con.execute(
            "SELECT p.experiment_id, p.org_id, p.task_type, p.admitted, p.alpha_slot FROM experiment_plans p "
            "ANTI JOIN replaced_plans USING (experiment_id)"
        ).pl()
        events = con.execute(load_sql("select_experiment_events")).pl()
        new = registrations.filter(~pl.col("experiment_id").is_in(existing.get_column("experiment_id").to_list()))
        traffic = None  # measured for new registrations only: a night without one reads no session
        if new.height:
            with transaction(con, new_registrations=new.select("experiment_id", "org_id", "task_type", "randomization_unit",
                                                                "registered_at")):
                traffic = con.execute(load_sql("measure_family_traffic")).pl()
        exported = con.execute("SELECT DISTINCT experiment_id FROM staged_arm_snapshots").pl()
        plans = plan_registrations(new, existing, events, traffic, policy, aggregate_exports=exported)
        lineage = con.execute(load_sql("select_registration_lineage")).pl()
        refused = refusal_quarantine(plans, lineage, policy)
        _, bad_changes = allocation_changes(events, decode_arms(registrations), registrations)
        bad = bad_changes.join(con.execute(load_sql("select_event_lineage")).pl(), on=["experiment_id", "at"], how="left")
        bad_rows = bad.select(
            pl.lit("experiment_events").alias("source_table"), "partition_day", "source_file", "source_row",
            pl.lit("registration").alias("stage"), pl.lit("bad_allocation_change").alias("rule"),
            pl.format("declared allocation change ignored: {}", "why").alias("reason"), pl.col("allocation").alias("record"),
        )
        with transaction(con, plans_batch=plans, refused_batch=refused, bad_changes_batch=bad_rows):
            con.execute(load_sql("delete_replaced_plans"))
            con.execute(load_sql("insert_new_experiment_plans"))
            con.execute(load_sql("insert_registration_quarantine"))
            changelog.record(con, "experiment_plans", "SELECT experiment_id, NULL AS session_id, NULL AS day FROM plans_batch")
            changelog.advance(con, "experiment_plans", PLANS_FINGERPRINT, changes)
        total = con.execute("SELECT count(*), count(*) FILTER (WHERE NOT admitted) FROM experiment_plans").fetchone()
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(total[0]),
            "new_plans": plans.height,
            "refused_registrations": int(total[1]),
            "alpha_slots": policy.alpha_slots,
            "policy_version": policy.version,
            "ignored_allocation_changes": bad_rows.height,
            "preview": dg.MetadataValue.md(markdown_table(plans.select(
                "experiment_id", "admitted", "alpha_slot", "alpha_share", "planned_unit", "planned_n_per_arm",
                "reachable", "days_to_plan", "plan_reason").head(20))),
        }
    )


@dg.asset(
    deps=[experience, experiment_plans, dg.AssetKey("staged_arm_snapshots"), dg.AssetKey("staged_experiment_events")],
    group_name="analysis",
    kinds={"duckdb", "scipy", "statsmodels"},
    pool="duckdb",
    check_specs=[checks.SAMPLE_RATIO],
)
def experiment_analysis(context: dg.AssetExecutionContext, config: LookConfig, warehouse: Warehouse,
                        engine: ComputeEngine) -> dg.MaterializeResult:
    """One look per night, with the decision: for every experiment, metric and comparison (treatment vs
    control), the decision of DESIGN section 6 (first match wins) and its reason in words; the anytime-valid
    confidence sequence read at the comparison's Holm step, raw and Holm-adjusted anytime-valid p-values;
    descriptive fixed-horizon figures labelled by method (Miettinen-Nurminen score with Fisher's exact test
    for small tables, Welch, delta method); SRM (sequential, chi-square beside it), drift, outcome imbalance
    and contract violations; information fraction, power reached for the MDE, days to the plan, verified
    share and users in both arms. Every experiment is looked at on each day its data changed, on its registration
    day and tonight; a night writes tonight's look and, for each experiment whose data changed, its looks from
    the first changed day on (from the stored per-day sums, `arm_day_sums`), so corrections converge to a fresh
    load and missed nights are caught up; looks of nights after tonight (a run for an earlier night) are kept."""
    as_of = config.day()
    with warehouse.connect() as con:
        recreated = EXPERIMENT_ANALYSIS.ensure(con)
        taken = take_looks(con, as_of, engine.open(warehouse), everything=recreated)
        look, written, dirty = taken.look, taken.written, taken.update.dirty
        with transaction(con, look_batch=look, written_nights=written, current_nights=taken.nights):
            con.execute(load_sql("delete_looks"), {"as_of": as_of})
            con.execute(load_sql("insert_look"))
            taken.update.commit(con)  # the state's cursor moves with the looks written from its changes
            pruned = changelog.prune(con)  # the change log keeps what some table has still to read
        ratio = checks.sample_ratio(con, as_of)
    nights = written.select("as_of").unique()
    latest = look.filter((pl.col("as_of") == pl.lit(as_of).str.to_date()) & pl.col("is_primary"))
    counts = latest.group_by("decision").len().sort("decision")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": look.height,  # the rows this pass wrote
            "as_of": as_of,
            "engine": engine.engine,
            "nights_written": nights.height,
            "rows_written": look.height,
            "experiments_with_changes": dirty.height,
            "change_log_rows_pruned": pruned,
            "table_recreated": recreated,
            "experiments": taken.nights.get_column("experiment_id").n_unique(),
            "decisions": dg.MetadataValue.json({d or "none": int(n) for d, n in counts.iter_rows()}),
            "primary_comparisons": dg.MetadataValue.md(
                markdown_table(
                    latest.select(
                        "experiment_id", "treatment_arm", "decision", "decision_reason", "cs_low", "cs_high",
                        "cs_p_adjusted", "srm_sequential_p", "information_fraction", "days_to_plan",
                    ).head(60)
                )
            ),
        },
        check_results=[ratio],
    )


@dg.asset(deps=[experiment_analysis], group_name="analysis", kinds={"duckdb"}, pool="duckdb")
def knowledge_records(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Append-only knowledge: a deterministic promotion gate (version recorded) turns each primary comparison's
    `adopt`, `reject` and `no_effect` into a record citing the experiment, the look, the evaluators (id,
    version, kind) of its verified outcomes and a digest of the evidence; a contradicting later decision or an
    `invalid` look appends a record that supersedes it. Nothing is ever edited or deleted."""
    with warehouse.connect() as con:
        KNOWLEDGE_RECORDS.ensure(con)
        EXPERIMENT_ANALYSIS.ensure(con)
        looks = con.execute("SELECT * FROM experiment_analysis WHERE is_primary").pl()
        records = con.execute("SELECT * FROM knowledge_records").pl()
        with transaction(con, cited_looks=cited_looks(looks)):
            evaluators = con.execute(load_sql("select_look_evaluators")).pl()
        source = looks.select("experiment_id", "source").unique(subset="experiment_id", keep="first")
        new = promote(looks, records, evaluators, source)
        with transaction(con, records_batch=new):
            con.execute(load_sql("insert_knowledge_records"))
        total = con.execute("SELECT count(*) FROM knowledge_records").fetchone()[0]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(total),
            "appended": new.height,
            "gate_version": GATE_VERSION,
            "appended_records": dg.MetadataValue.md(markdown_table(new.select(
                "experiment_id", "treatment_arm", "claim", "look_as_of", "supersedes", "statement").head(30))),
        }
    )


@dg.asset(deps=[experiment_analysis, dg.AssetKey("loop_health")], group_name="analysis", kinds={"duckdb", "scipy"},
          pool="duckdb")
def family_outlook(context: dg.AssetExecutionContext, config: PlanConfig, warehouse: Warehouse) -> dg.MaterializeResult:
    """What each organization and task type could detect if it registered tonight (`zcl plan`'s figures for
    every family): its traffic, verified share and success rate over the 28 days before the night, whether a
    slot is free (or when the next one frees), and, for a one-treatment experiment on `success`, the control
    units it would reach in 14, 28 and 56 days at its share of the traffic and the smallest increase whose plan
    they reach. The report draws each family's power curve from these figures."""
    as_of = materialized_look(context.instance)
    with warehouse.connect() as con:
        FAMILY_OUTLOOK.ensure(con)
        rows = outlook_of_families(con, dt.date.fromisoformat(as_of), RegistrationPolicy(alpha_slots=config.alpha_slots)) \
            if as_of else pl.DataFrame(schema=FAMILY_OUTLOOK.polars)
        with transaction(con, outlook_batch=rows):
            con.execute("DELETE FROM family_outlook")
            con.execute(f"INSERT INTO family_outlook BY NAME SELECT {', '.join(FAMILY_OUTLOOK.names)} FROM outlook_batch")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": rows.height,
        "as_of": as_of or "none",
        "families": dg.MetadataValue.md(markdown_table(rows.select(
            "org_id", "task_type", "traffic_per_day", "baseline", "slot_free", "next_free_slot", "mde_14d", "mde_28d",
            "mde_56d").head(60))),
    })


@dg.asset(deps=[experiment_analysis], group_name="analysis", kinds={"duckdb", "statsmodels"}, pool="duckdb")
def segment_breakdowns(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """**Exploratory, never a decision.** For every experiment whose primary metric is success, each treatment
    arm against control within each model and each budget of the sessions (verified sessions assigned by the
    night): the difference with its Miettinen-Nurminen 95% score interval and p, and the p adjusted by
    Benjamini-Hochberg across the segments of the comparison and dimension. Each experiment's page shows them
    under "Exploratory"."""
    as_of = materialized_look(context.instance)
    with warehouse.connect() as con:
        SEGMENT_BREAKDOWNS.ensure(con)
        night = dt.date.fromisoformat(as_of) if as_of else None
        rows = breakdowns_of(segment_counts(con, night), night) if night else pl.DataFrame(schema=SEGMENT_BREAKDOWNS.polars)
        with transaction(con, breakdown_batch=rows):
            con.execute("DELETE FROM segment_breakdowns")
            con.execute(f"INSERT INTO segment_breakdowns BY NAME SELECT {', '.join(SEGMENT_BREAKDOWNS.names)} FROM breakdown_batch")
    low = rows.filter(pl.col("p_bh") < 0.05)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": rows.height,
        "as_of": as_of or "none",
        "experiments": rows.get_column("experiment_id").n_unique(),
        "segments_below_0_05_after_bh": low.height,
        "lowest_adjusted_p": dg.MetadataValue.md(markdown_table(rows.sort("p_bh").select(
            "experiment_id", "treatment_arm", "dimension", "segment", "n_control", "n_treatment", "difference", "ci_low",
            "ci_high", "p_bh").head(30))),
    })


def materialized_look(instance: dg.DagsterInstance) -> str | None:
    """The UTC day (``YYYY-MM-DD``) of the look last materialized by ``experiment_analysis``.

    Checks and reports downstream of the look read this, so that they describe the look just
    taken, not the newest ``as_of`` in the table (a re-run of an earlier night is not the newest).
    None before the first look.
    """
    event = instance.get_latest_materialization_event(experiment_analysis.key)
    if event is None or event.asset_materialization is None:
        return None
    value = event.asset_materialization.metadata.get("as_of")
    return getattr(value, "value", value) or None
