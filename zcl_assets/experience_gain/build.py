"""Build the Experience Gain and loop-health tables (SQL under ``sql/experience_gain/``).

DuckDB reduces the experience table to a few numbers per task and arm; Python computes the
per-task gains, pools them per organization and metric and states the claim.
"""

from __future__ import annotations

import duckdb
import polars as pl

from contracts.evaluation import load_evaluation_contracts
from sql import load_sql
from zcl_assets.experience_gain.gain import pool_gains, task_gain
from zcl_assets.ingest.versions import built_at, input_fingerprint, record_built
from zcl_assets.warehouse import transaction

BY_TASK_SCHEMA = {
    "org_id": pl.String, "task_type": pl.String, "experiment_id": pl.String, "metric": pl.String, "direction": pl.String,
    "n_on": pl.Int64, "n_off": pl.Int64, "runs_on": pl.Int64, "runs_off": pl.Int64, "mean_on": pl.Float64,
    "mean_off": pl.Float64, "gain": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "ci_method": pl.String,
    "variance": pl.Float64, "min_samples_per_arm": pl.Int64, "incomparable_runs": pl.Int64, "status": pl.String,
    "reason": pl.String,
}
POOLED_SCHEMA = {
    "org_id": pl.String, "metric": pl.String, "tasks": pl.Int64, "task_types": pl.Int64, "tasks_collecting": pl.Int64,
    "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "ci_method": pl.String, "tau2": pl.Float64,
    "pvalue": pl.Float64, "claim_level": pl.String, "reason": pl.String,
}


def _status(r: dict) -> tuple[str, str]:
    """(status, reason) of one task: pooled, collecting (short of its minimum sample) or excluded."""
    if r["arm_count"] != 2:
        return "excluded", f"memory_mode needs two arms (recall on, recall off); {r['experiment_id']} has {r['arm_count']}"
    if r["n_on"] < 2 or r["n_off"] < 2:
        return "excluded", f"fewer than 2 analysis units in an arm ({r['n_on']} on, {r['n_off']} off): no interval"
    need = r["min_samples_per_arm"]
    if min(r["n_on"], r["n_off"]) < need:
        return "collecting", f"{r['n_on']} on / {r['n_off']} off of the registered minimum {need} per arm"
    return "pooled", f"{r['n_on']} on / {r['n_off']} off, at least the registered minimum {need} per arm"


def gain_tables(arms: pl.DataFrame, alpha: float = 0.05) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-task gains and pooled gains from the rows of ``select_memory_mode_arms.sql``.

    Returns ``(by_task, pooled)`` with the schemas :data:`BY_TASK_SCHEMA` and :data:`POOLED_SCHEMA`;
    one pooled row per organization and metric that has a memory_mode experiment.
    """
    by_task = []
    for r in arms.iter_rows(named=True):
        status, reason = _status(r)
        if r["n_on"] and r["n_off"]:
            g = task_gain(r["n_on"], r["mean_on"], r["var_on"] if r["var_on"] is not None else float("nan"),
                          r["n_off"], r["mean_off"], r["var_off"] if r["var_off"] is not None else float("nan"),
                          direction=r["direction"], alpha=alpha)
        else:
            g = task_gain(0, 0.0, 0.0, 0, 0.0, 0.0, direction=r["direction"], alpha=alpha)._replace(gain=float("nan"))
        by_task.append({
            "org_id": r["org_id"], "task_type": r["task_type"], "experiment_id": r["experiment_id"], "metric": r["metric"],
            "direction": r["direction"], "n_on": r["n_on"], "n_off": r["n_off"], "runs_on": r["runs_on"],
            "runs_off": r["runs_off"], "mean_on": r["mean_on"], "mean_off": r["mean_off"], "gain": g.gain,
            "ci_low": g.ci_low, "ci_high": g.ci_high, "ci_method": "welch_t", "variance": g.variance,
            "min_samples_per_arm": r["min_samples_per_arm"], "incomparable_runs": r["incomparable_runs"],
            "status": status, "reason": reason,
        })
    tasks = pl.DataFrame(by_task, schema=BY_TASK_SCHEMA, orient="row") if by_task else pl.DataFrame(schema=BY_TASK_SCHEMA)
    pooled = []
    for (org, metric), group in tasks.group_by(["org_id", "metric"], maintain_order=True):
        ready = group.filter(pl.col("status") == "pooled")
        p = pool_gains(ready["gain"].to_list(), ready["variance"].to_list(), ready["task_type"].to_list(),
                       waiting=group.filter(pl.col("status") == "collecting").height, alpha=alpha)
        pooled.append({
            "org_id": org, "metric": metric, "tasks": p.tasks, "task_types": p.task_types,
            "tasks_collecting": group.filter(pl.col("status") == "collecting").height,
            "estimate": p.estimate, "ci_low": p.ci_low, "ci_high": p.ci_high,
            "ci_method": "random effects (DerSimonian-Laird), HKSJ", "tau2": p.tau2, "pvalue": p.pvalue,
            "claim_level": p.claim_level, "reason": p.reason,
        })
    out = pl.DataFrame(pooled, schema=POOLED_SCHEMA, orient="row") if pooled else pl.DataFrame(schema=POOLED_SCHEMA)
    return tasks, out


def build_experience_gain(con: duckdb.DuckDBPyConnection, alpha: float = 0.05) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rebuild ``experience_gain_by_task`` and ``experience_gain``; returns their rows."""
    arms = con.execute(load_sql("experience_gain/select_memory_mode_arms")).pl()
    by_task, pooled = gain_tables(arms, alpha=alpha)
    with transaction(con, gain_by_task_batch=by_task, gain_batch=pooled):
        con.execute(load_sql("experience_gain/create_experience_gain_by_task"))
        con.execute(load_sql("experience_gain/create_experience_gain"))
    return by_task, pooled


def build_loop_health(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Rebuild ``loop_health`` (per organization and week) unless its inputs are unchanged; returns its rows."""
    contracts = [f"{c.source}:{','.join(c.authoritative_kinds)}" for c in load_evaluation_contracts()]
    fingerprint = input_fingerprint(con, load_sql("experience_gain/create_loop_health"), load_sql("select_verification_records"), *contracts)
    if built_at(con, "loop_health", fingerprint, "loop_health") is None:
        with transaction(con):
            con.execute(load_sql("experience_gain/create_loop_health"))
            record_built(con, "loop_health", fingerprint)
    return con.execute("SELECT * FROM loop_health ORDER BY org_id, week").pl()
