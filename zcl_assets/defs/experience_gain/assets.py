"""Experience Gain and loop-health assets (docs/funnel.md, "Experience Gain")."""

import math

import dagster as dg
import polars as pl

from resources import Warehouse
from zcl_assets.defs.funnel.metadata import chart, table
from zcl_assets.experience_gain.build import build_experience_gain, build_loop_health


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _forest(by_task: pl.DataFrame, pooled: pl.DataFrame, width: int = 41) -> str:
    """A text forest plot: one line per task and per pooled estimate, interval as dashes, zero as '|'."""
    rows = [(f"{r['org_id']}/{r['task_type']}", r["gain"], r["ci_low"], r["ci_high"]) for r in by_task.iter_rows(named=True)]
    rows += [(f"{r['org_id']} pooled ({r['claim_level']})", r["estimate"], r["ci_low"], r["ci_high"]) for r in pooled.iter_rows(named=True)]
    finite = [v for _, g, lo, hi in rows for v in (g, lo, hi) if _finite(v)]
    if not finite:
        return "(no estimate yet)"
    lo_all, hi_all = min([*finite, 0.0]), max([*finite, 0.0])
    span = (hi_all - lo_all) or 1.0

    def col(x: float) -> int:
        return round((width - 1) * (x - lo_all) / span)

    lines = []
    for label, g, lo, hi in rows:
        cells = [" "] * width
        cells[col(0.0)] = "|"
        if _finite(lo) and _finite(hi):
            for i in range(col(lo), col(hi) + 1):
                cells[i] = "-"
        if _finite(g):
            cells[col(g)] = "o"
        lines.append(f"{label[:34]:<34} {''.join(cells)} {g if g is None else round(g, 4)}")
    lines.append(f"{'':<34} {lo_all:.3g} .. {hi_all:.3g} ('|' = no gain)")
    return "\n".join(lines)


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "experience_gain_by_task",
            deps=[dg.AssetKey("experience"), dg.AssetKey("staged_experiments"), dg.AssetKey("staged_sessions")],
            group_name="analysis",
            kinds={"duckdb", "scipy"},
            description=(
                "Experience Gain per task: for every experiment of kind memory_mode, the primary metric with recall "
                "(the treatment arm) minus without (the control arm), over analysis units, same task, model and "
                "budget (runs in a (model, budget) cell seen in one arm only are left out and counted), signed so "
                "that positive means recall helped, with Welch's 95% interval. Status: pooled (at least the "
                "registered minimum sample per arm), collecting, or excluded with the reason."
            ),
        ),
        dg.AssetSpec(
            "experience_gain",
            deps=["experience_gain_by_task", dg.AssetKey("experiment_analysis")],
            group_name="analysis",
            kinds={"duckdb", "statsmodels"},
            description=(
                "Experience Gain pooled across tasks per organization and metric: random effects (DerSimonian-Laird) "
                "with the Hartung-Knapp-Sidik-Jonkman 95% interval (Knapp-Hartung max(1, q) rule; descriptive), and the "
                "claim level it supports: `none` until the pooled interval lies above zero across at least two task "
                "types with repeated runs and every pooled task's experiment decided `adopt`, then `positive` (or "
                "`negative` below zero, every one `reject`), with the reason in words."
            ),
        ),
    ],
    pool="duckdb",
)
def experience_gain(context: dg.AssetExecutionContext, warehouse: Warehouse):
    with warehouse.connect() as con:
        by_task, pooled = build_experience_gain(con)
    forest = chart(_forest(by_task, pooled))
    yield dg.MaterializeResult(
        asset_key="experience_gain_by_task",
        metadata={
            "dagster/row_count": by_task.height,
            "pooled_tasks": by_task.filter(pl.col("status") == "pooled").height,
            "gains": table(by_task.select("org_id", "task_type", "metric", "n_on", "n_off", "gain", "ci_low", "ci_high",
                                          "incomparable_runs", "status")),
            "forest_plot": forest,
        },
    )
    levels = {f"{r['org_id']}/{r['metric']}/claim_level": r["claim_level"] for r in pooled.iter_rows(named=True)}
    estimates = {
        f"{r['org_id']}/{r['metric']}/estimate": dg.MetadataValue.float(float(r["estimate"]))
        for r in pooled.iter_rows(named=True) if _finite(r["estimate"])
    }
    yield dg.MaterializeResult(
        asset_key="experience_gain",
        metadata={
            "dagster/row_count": pooled.height,
            "claim_levels": table(pooled.select("org_id", "metric", "tasks", "task_types", "estimate", "ci_low", "ci_high",
                                                "claim_level", "reason")),
            "forest_plot": forest,
            **levels,
            **estimates,
        },
    )


@dg.asset(
    deps=[dg.AssetKey("verification_records"), dg.AssetKey("staged_sessions")],
    group_name="experience",
    kinds={"duckdb"},
    pool="duckdb",
)
def loop_health(context: dg.AssetExecutionContext, warehouse: Warehouse) -> dg.MaterializeResult:
    """Loop health per organization and UTC week (seed note 002, section 15): the valid verification rate
    (sessions with an authoritative outcome / sessions) and the repeated-failure rate (verified failures
    whose previous verified session of the same user and task type also failed / verified failures)."""
    with warehouse.connect() as con:
        rows = build_loop_health(con)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": rows.height,
            "loop_health": table(rows.tail(60)),
        }
    )
