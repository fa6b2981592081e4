"""Build the Experience Gain and loop-health tables (SQL under ``sql/experience_gain/``).

DuckDB reduces the experience table to a few numbers per task and arm; Python computes the
per-task gains, pools them per organization and metric and states the claim.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from contracts.evaluation import load_evaluation_contracts
from sql import load_sql
from zcl_assets.experience_gain.gain import pool_gains, task_gain
from zcl_assets.ingest import changelog
from zcl_assets.ingest.versions import code_fingerprint
from zcl_assets.warehouse import has_table, transaction

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
    return tasks, pool_tables(tasks, alpha=alpha)


def pool_tables(tasks: pl.DataFrame, alpha: float = 0.05, decisions: pl.DataFrame | None = None) -> pl.DataFrame:
    """The pooled rows (:data:`POOLED_SCHEMA`) of per-task gains: one per organization and metric;
    ``decisions`` (``experiment_id, decision``: each experiment's latest primary decision) gate
    the claim (``gain.claim``); without it every pooled experiment counts as undecided."""
    decided = dict(decisions.iter_rows()) if decisions is not None and decisions.height else {}
    pooled = []
    for (org, metric), group in tasks.group_by(["org_id", "metric"], maintain_order=True):
        ready = group.filter(pl.col("status") == "pooled")
        p = pool_gains(ready["gain"].to_list(), ready["variance"].to_list(), ready["task_type"].to_list(),
                       waiting=group.filter(pl.col("status") == "collecting").height, alpha=alpha,
                       decisions=[decided.get(e) for e in ready["experiment_id"].to_list()])
        pooled.append({
            "org_id": org, "metric": metric, "tasks": p.tasks, "task_types": p.task_types,
            "tasks_collecting": group.filter(pl.col("status") == "collecting").height,
            "estimate": p.estimate, "ci_low": p.ci_low, "ci_high": p.ci_high,
            "ci_method": "random effects (DerSimonian-Laird), HKSJ with max(1, q), descriptive", "tau2": p.tau2,
            "pvalue": p.pvalue,
            "claim_level": p.claim_level, "reason": p.reason,
        })
    return pl.DataFrame(pooled, schema=POOLED_SCHEMA, orient="row") if pooled else pl.DataFrame(schema=POOLED_SCHEMA)


def _gain_changes(con: duckdb.DuckDBPyConnection, alpha: float) -> tuple[changelog.Changes, str]:
    """The changes the Experience Gain tables have to read (all, the first time or under new code), and their fingerprint."""
    fingerprint = code_fingerprint(*(load_sql(f"experience_gain/{n}") for n in _GAIN_SQL), str(alpha))
    built = has_table(con, "main.experience_gain_by_task") and has_table(con, "main.experience_gain")
    return changelog.changes_since(con, "experience_gain", fingerprint if built else ""), fingerprint


def _loop_health_changes(con: duckdb.DuckDBPyConnection) -> tuple[changelog.Changes, str]:
    """The changes ``loop_health`` has to read (all, the first time or under new code), and its fingerprint."""
    contracts = [f"{c.source}:{','.join(c.authoritative_kinds)}" for c in load_evaluation_contracts()]
    fingerprint = code_fingerprint(*(load_sql(f"experience_gain/{n}") for n in _LOOP_HEALTH_SQL), *contracts)
    built = has_table(con, "main.loop_health") and has_table(con, "internal.loop_health_days")
    return changelog.changes_since(con, "loop_health", fingerprint if built else ""), fingerprint


def loop_health_pending(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether :func:`build_loop_health` would recount anything now (read-only)."""
    return changelog.has_changes(con, _loop_health_changes(con)[0])


def build_experience_gain(con: duckdb.DuckDBPyConnection, alpha: float = 0.05) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Bring ``experience_gain_by_task`` and ``experience_gain`` up to date; returns their rows.

    The tasks (memory_mode experiments) whose experience rows or registration changed since the
    last build are read again; the others keep their rows; the pooled rows follow from all.
    """
    changes, fingerprint = _gain_changes(con, alpha)
    if not changelog.has_changes(con, changes):
        # the per-task gains stand; the claims follow the experiments' latest decisions
        by_task = con.execute("SELECT * FROM experience_gain_by_task").pl()
        pooled = pool_tables(by_task, alpha=alpha, decisions=_decisions(con))
        with transaction(con, gain_batch=pooled):
            con.execute(load_sql("experience_gain/create_experience_gain"))
        return by_task, pooled
    scope = con.execute("SELECT experiment_id FROM staged_experiments" if changes.full else
                        f"SELECT DISTINCT experiment_id FROM {changes.relation} WHERE experiment_id IS NOT NULL").pl()
    con.register("gain_scope", scope)
    try:
        changed, _ = gain_tables(con.execute(load_sql("experience_gain/select_memory_mode_arms")).pl(), alpha=alpha)
        kept = pl.DataFrame(schema=BY_TASK_SCHEMA) if changes.full else con.execute(
            "SELECT * FROM experience_gain_by_task ANTI JOIN gain_scope USING (experiment_id) "
            "WHERE experiment_id IN (SELECT experiment_id FROM staged_experiments WHERE kind = 'memory_mode')").pl()
    finally:
        con.unregister("gain_scope")
    by_task = pl.concat([kept.cast(BY_TASK_SCHEMA), changed], how="vertical").sort("org_id", "task_type", "experiment_id")
    pooled = pool_tables(by_task, alpha=alpha, decisions=_decisions(con))
    with transaction(con, gain_by_task_batch=by_task, gain_batch=pooled):
        con.execute(load_sql("experience_gain/create_experience_gain_by_task"))
        con.execute(load_sql("experience_gain/create_experience_gain"))
        changelog.advance(con, "experience_gain", fingerprint, changes)
    return by_task, pooled


def _decisions(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """``experiment_id, decision``: each experiment's primary decision at its latest look (none
    before the first look)."""
    if not has_table(con, "main.experiment_analysis"):
        return pl.DataFrame(schema={"experiment_id": pl.String, "decision": pl.String})
    return con.execute("SELECT experiment_id, arg_max(decision, as_of) AS decision FROM experiment_analysis "
                       "WHERE is_primary GROUP BY experiment_id ORDER BY experiment_id").pl()


_GAIN_SQL = ("select_memory_mode_arms", "create_experience_gain_by_task", "create_experience_gain")



def build_loop_health(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Bring ``loop_health`` (per organization and week) up to date; returns its rows.

    Its daily counts are recomputed from the first day the changes since the last build touch
    (a session's start, or the start of a session whose verification records changed), the
    weeks summed again from them.
    """
    changes, fingerprint = _loop_health_changes(con)
    if changelog.has_changes(con, changes):
        from_day = FIRST_DAY if changes.full else _first_changed_day(con, changes.relation)
        with transaction(con):
            if changes.full:  # the first build, or new code: the daily counts in the shape it declares
                con.execute("DROP TABLE IF EXISTS internal.loop_health_days")
                con.execute(load_sql("experience_gain/create_loop_health_days"))
            if from_day is not None:
                from_at = dt.datetime.combine(from_day, dt.time(), tzinfo=dt.timezone.utc)
                con.execute("DELETE FROM internal.loop_health_days WHERE day >= $day", {"day": from_day})
                con.execute(f"INSERT INTO internal.loop_health_days BY NAME {load_sql('experience_gain/aggregate_loop_health_days')}",
                            {"from_at": from_at})
                con.execute(load_sql("experience_gain/create_loop_health"))
            changelog.advance(con, "loop_health", fingerprint, changes)
    return con.execute("SELECT * FROM loop_health ORDER BY org_id, week").pl()


_LOOP_HEALTH_SQL = ("create_loop_health_days", "aggregate_loop_health_days", "create_loop_health")
FIRST_DAY = dt.date(1, 1, 1)


def _first_changed_day(con: duckdb.DuckDBPyConnection, changes: str) -> dt.date | None:
    """The first UTC day of a session start the changes touch (None: they touch none)."""
    return con.execute(
        f"SELECT min(day) FROM (SELECT day FROM {changes} WHERE source = 'staged_sessions' "
        f"UNION ALL SELECT CAST(s.started_at AS DATE) FROM staged_sessions s WHERE s.session_id IN ("
        f"SELECT session_id FROM {changes} WHERE source = 'verification_records'))"
    ).fetchone()[0]
