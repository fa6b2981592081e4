"""Nightly assets: verification records, the experience fact table, frozen plans, the look."""

import datetime as dt

import dagster as dg
import polars as pl

from contracts.evaluation import load_evaluation_contracts
from resources import Warehouse
from resources.warehouse import transaction
from sql import load_sql
from zcl_assets.analysis.look import take_look
from zcl_assets.analysis.plans import plan_registrations
from zcl_assets.reports.markdown import markdown_table

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
def verification_records(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Every staged outcome judged by its task type's evaluation contract (contracts/evaluation/*.yaml):
    who decided it (evaluator id, version, kind) and whether that kind is authoritative. Non-authoritative
    outcomes are kept and counted, never used for decisions."""
    contracts = load_evaluation_contracts()
    batch = pl.DataFrame(
        {
            "task_type": [c.task_type for c in contracts],
            "authoritative_kinds": [list(c.authoritative_kinds) for c in contracts],
            "source": [c.source for c in contracts],
        }
    )
    with warehouse.connect() as con:
        with transaction(con, evaluation_contracts_batch=batch):
            con.execute(load_sql("create_evaluation_contracts"))
            con.execute(load_sql("create_verification_records"))
        counts = con.execute(
            "SELECT evaluator_kind, authoritative, count(*) AS outcomes FROM verification_records GROUP BY ALL ORDER BY ALL"
        ).pl()
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(counts.get_column("outcomes").sum() or 0),
            "authoritative": int(counts.filter(pl.col("authoritative")).get_column("outcomes").sum() or 0),
            "by_kind": dg.MetadataValue.md(markdown_table(counts)),
        }
    )


@dg.asset(
    deps=[verification_records, *STAGED],
    group_name="experience",
    kinds={"duckdb"},
    pool="duckdb",
)
def experience(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """The analysis fact table: one row per (experiment, session) with its arm, unit and verified
    outcome. Assignments whose session is missing or delivered another arm, units assigned to several
    arms or contaminated by such a row (user-randomized), and repeated units of unit-level experiments
    go to `quarantine` (stage `experience`) with the rule and reason."""
    with warehouse.connect() as con:
        with transaction(con):
            con.execute(load_sql("select_experience_candidates"))
            con.execute(load_sql("create_experience"))
            con.execute(load_sql("delete_experience_quarantine"))
            con.execute(load_sql("insert_experience_quarantine"))
        by_rule = con.execute(
            "SELECT coalesce(exclusion, 'kept') AS rule, count(*) AS rows FROM experience_candidates GROUP BY ALL ORDER BY ALL"
        ).pl()
        kept = con.execute("SELECT count(*) FROM experience").fetchone()[0]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(kept),
            "assignments_by_rule": dg.MetadataValue.md(markdown_table(by_rule)),
        }
    )


@dg.asset(deps=[dg.AssetKey("staged_experiments")], group_name="analysis", kinds={"duckdb", "scipy"}, pool="duckdb")
def experiment_plans(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Planned sample per arm of every registered experiment, from a power analysis for the deciding
    confidence sequence on the registered baseline, MDE, alpha and power (inflated by the calibrated R,
    divided by the expected verified share, never below the minimum). Computed once and frozen."""
    with warehouse.connect() as con:
        registrations = con.execute(load_sql("select_registrations")).pl()
        known = set(con.execute("SELECT experiment_id FROM experiment_plans").pl().get_column("experiment_id").to_list())
        new = registrations.filter(~pl.col("experiment_id").is_in(list(known)))
        plans = plan_registrations(new)
        with transaction(con, plans_batch=plans):
            con.execute(load_sql("insert_new_experiment_plans"))
        total = con.execute("SELECT count(*) FROM experiment_plans").fetchone()[0]
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(total),
            "new_plans": plans.height,
            "preview": dg.MetadataValue.md(markdown_table(plans.head(20))),
        }
    )


@dg.asset(
    deps=[experience, experiment_plans, dg.AssetKey("staged_arm_snapshots")],
    group_name="analysis",
    kinds={"duckdb", "scipy", "statsmodels"},
    pool="duckdb",
)
def experiment_analysis(context: dg.AssetExecutionContext, config: LookConfig, warehouse: Warehouse) -> dg.MaterializeResult:
    """One look per night: for every experiment, metric and comparison (treatment vs control), units and
    successes or mean and variance per arm, the difference with a 95% interval, a p-value with the name of
    its test (Fisher's exact for binary, Welch for continuous, delta method for per-user ratios), relative
    lift, SRM on units, the confidence sequence and the frozen planned sample. Re-running a night replaces
    its rows. No decision yet."""
    as_of = config.day()
    with warehouse.connect() as con:
        look = take_look(con, as_of)
        with transaction(con, look_batch=look):
            con.execute(load_sql("delete_look"), {"as_of": as_of})
            con.execute(load_sql("insert_look"), {"as_of": as_of})
    primary = look.filter(pl.col("is_primary"))
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": look.height,
            "as_of": as_of,
            "experiments": look.get_column("experiment_id").n_unique(),
            "primary_comparisons": dg.MetadataValue.md(
                markdown_table(
                    primary.select(
                        "experiment_id", "treatment_arm", "n_control", "n_treatment", "difference", "ci_low", "ci_high",
                        "p_value", "p_method", "planned_n_per_arm",
                    ).head(60)
                )
            ),
        }
    )


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
