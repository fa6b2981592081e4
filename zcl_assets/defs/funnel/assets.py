"""Funnel assets over the staged lifecycle events and sessions (docs/funnel.md)."""

import dagster as dg
import polars as pl

from resources import Warehouse
from zcl_assets.defs.funnel import checks
from zcl_assets.defs.funnel.metadata import chart, table
from zcl_assets.funnel.budgets import load_budgets
from zcl_assets.funnel.build import build_exploration_share, build_funnel
from zcl_assets.reports.funnel import stage_chart, stage_rows


class FunnelConfig(dg.Config):
    """``budgets_file``: a YAML file of budgets (shape of ``zcl_assets/funnel/budgets.yaml``);
    empty means the file shipped in the package, with its documented defaults."""

    budgets_file: str = ""


def _funnel_specs() -> list[dg.AssetSpec]:
    """The funnel's tables, replayed together from the admission ledger (a function: a module-level spec
    would be loaded as an asset of its own)."""
    return [
        dg.AssetSpec(
            "admission_states",
            deps=[dg.AssetKey("staged_admission_events")],
            group_name="funnel",
            kinds={"duckdb"},
            description=(
                "One row per exploration admission: its current state (the stage of its last valid lifecycle "
                "event), when it reached each stage, and its budget slots: the n-th admission of an organization "
                "on a UTC day takes attempt slot n (charged at `admitted`), the n-th launch takes launch slot n "
                "(charged at `launched`), within the cap when n <= cap. Impossible transitions (terminal before "
                "launched, launched twice, an event after terminal, ...) go to `quarantine` (stage `funnel`) with "
                "the rule and reason; stalled admissions are flagged."
            ),
        ),
        dg.AssetSpec(
            "funnel_stage_counts",
            deps=["admission_states"],
            group_name="funnel",
            kinds={"duckdb"},
            description=(
                "Admissions entering each stage (admitted, consumed, launched, blocked, terminal split by outcome "
                "productive, unproductive, failed) per UTC day of the transition, organization, task type and arm. "
                "Rebuilt from the whole ledger: materializing again never doubles a count."
            ),
        ),
        dg.AssetSpec(
            "information_yield",
            deps=["admission_states"],
            group_name="funnel",
            kinds={"duckdb"},
            description=(
                "Useful (productive) observations per admission and per launch, per organization and per "
                "organization, task type and arm: how many admissions became evidence."
            ),
        ),
    ]


@dg.multi_asset(specs=_funnel_specs(), check_specs=list(checks.ADMISSION_CHECKS), pool="duckdb")
def funnel(context: dg.AssetExecutionContext, config: FunnelConfig, warehouse: Warehouse):
    budgets = load_budgets(config.budgets_file or None)
    with warehouse.connect() as con:
        built = build_funnel(con, budgets)
        states = con.execute(
            "SELECT org_id, state, count(*) AS admissions, count(*) FILTER (WHERE stalled) AS stalled "
            "FROM admission_states GROUP BY ALL ORDER BY ALL"
        ).pl()
        stages = stage_rows(con)
        counts_rows = con.execute("SELECT count(*) FROM funnel_stage_counts").fetchone()[0]
        yields = con.execute(
            "SELECT org_id, first_day, last_day, admissions, launched, productive, yield_per_admission, yield_per_launch "
            "FROM information_yield WHERE task_type = '(all)' ORDER BY org_id"
        ).pl()
        yield_rows = con.execute("SELECT count(*) FROM information_yield").fetchone()[0]
        checked = checks.admission_results(con)
    yield dg.MaterializeResult(
        asset_key="admission_states",
        metadata={
            "dagster/row_count": built.admissions,
            "events_replayed": built.events,
            "quarantined_events": sum(built.quarantined_by_rule.values()),
            "quarantined_by_rule": dg.MetadataValue.json(built.quarantined_by_rule),
            "by_state": table(states),
            "budgets": dg.MetadataValue.path(budgets.source),
        },
        check_results=checked,
    )
    stage_frame = pl.DataFrame(
        [{"org_id": org, **row} for org, rows in stages.items() for row in rows],
        schema={"org_id": pl.String, "stage": pl.String, "admissions": pl.Int64, "share_of_admitted": pl.Float64},
    )
    per_stage = {f"{org}/{row['stage']}": row["admissions"] for org, rows in stages.items() for row in rows}
    yield dg.MaterializeResult(
        asset_key="funnel_stage_counts",
        metadata={
            "dagster/row_count": int(counts_rows),
            "counts_per_stage": table(stage_frame, {"share_of_admitted": "admissions reaching the stage / admissions"}),
            "chart": chart("\n\n".join(f"{org}\n{stage_chart(rows)}" for org, rows in stages.items())),
            **per_stage,
        },
    )
    per_org = {}
    for r in yields.iter_rows(named=True):
        per_org[f"{r['org_id']}/yield_per_admission"] = dg.MetadataValue.float(float(r["yield_per_admission"] or 0.0))
        if r["yield_per_launch"] is not None:
            per_org[f"{r['org_id']}/yield_per_launch"] = dg.MetadataValue.float(float(r["yield_per_launch"]))
    yield dg.MaterializeResult(
        asset_key="information_yield",
        metadata={"dagster/row_count": int(yield_rows), "yield_per_organization": table(yields), **per_org},
    )


@dg.asset(deps=[dg.AssetKey("staged_sessions")], group_name="funnel", kinds={"duckdb", "statsmodels"}, pool="duckdb",
          check_specs=[checks.EXPLORATION_RATE])
def exploration_share(context: dg.AssetExecutionContext, config: FunnelConfig, warehouse: Warehouse) -> dg.MaterializeResult:
    """Exploration monitor: per organization and task type, the share of sessions that explored (took part in
    an experiment or were launched by an exploration admission) with its 95% Wilson interval, against the
    configured range: base rate to min(cap, base rate + uncertainty multiplier) (seed note 000: 0.2, 0.5, 0.4).
    Status `above_cap` or `below_base` when the interval lies outside the range."""
    budgets = load_budgets(config.budgets_file or None)
    with warehouse.connect() as con:
        rows = build_exploration_share(con, budgets)
        rate = checks.exploration_rate(con)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": rows.height,
            "above_cap": rows.filter(pl.col("status") == "above_cap").height,
            "below_base": rows.filter(pl.col("status") == "below_base").height,
            "exploration_share": table(rows.select("org_id", "task_type", "sessions", "explored", "share", "ci_low", "ci_high",
                                                   "rate_low", "rate_high", "status")),
        },
        check_results=[rate],
    )

