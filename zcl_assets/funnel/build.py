"""Build the funnel tables in the warehouse (DuckDB SQL under ``sql/funnel/``).

Every table is rebuilt from the whole staged ledger in one transaction, so materializing
again gives the same rows, never doubled ones, and a failed build leaves the previous rows.
"""

from __future__ import annotations

from typing import NamedTuple

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.funnel.budgets import Budgets
from zcl_assets.funnel.exploration import exploration_share
from zcl_assets.funnel.lifecycle import OUTCOMES, stage_order_frame, transitions_frame
from zcl_assets.warehouse import transaction


class FunnelBuild(NamedTuple):
    """What one build wrote: events replayed, admissions, quarantined events by rule."""

    events: int
    admissions: int
    quarantined_by_rule: dict[str, int]


def build_funnel(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> FunnelBuild:
    """Replay ``staged_admission_events`` and rebuild ``admission_states``,
    ``funnel_stage_counts``, ``information_yield``, ``arm_repeats`` and the ``funnel``
    quarantine rows, with the caps and eligible arms of ``budgets``.

    Leaves the temporary table ``admission_transitions`` (every event, valid or not, with its
    rule and reason) on ``con``.
    """
    frames = {
        "lifecycle_transitions": transitions_frame(),
        "lifecycle_stage_order": stage_order_frame(),
        "budget_caps": budgets.caps_frame(),
        "eligible_arms": budgets.eligible_arms_frame(),
    }
    defaults = budgets.defaults
    with transaction(con, **frames):
        con.execute(load_sql("funnel/select_admission_transitions"), {"outcomes": list(OUTCOMES)})
        con.execute(
            load_sql("funnel/create_admission_states"),
            {
                "launch_cap": defaults.launch_cap_per_day,
                "attempt_cap": defaults.attempt_cap_per_day,
                "stall_after_hours": float(defaults.stall_after_hours),
            },
        )
        con.execute(load_sql("funnel/delete_funnel_quarantine"))
        con.execute(load_sql("funnel/insert_funnel_quarantine"))
        con.execute(load_sql("funnel/create_funnel_stage_counts"))
        con.execute(load_sql("funnel/create_information_yield"))
        repeats = con.execute(load_sql("funnel/find_repeated_arms")).pl()
        con.register("arm_repeats_batch", repeats)
        try:
            con.execute(load_sql("funnel/create_arm_repeats"))
        finally:
            con.unregister("arm_repeats_batch")
    events = con.execute("SELECT count(*) FROM admission_transitions").fetchone()[0]
    admissions = con.execute("SELECT count(*) FROM admission_states").fetchone()[0]
    by_rule = dict(con.execute("SELECT rule, count(*) FROM admission_transitions WHERE NOT valid GROUP BY ALL ORDER BY ALL").fetchall())
    return FunnelBuild(events=int(events), admissions=int(admissions), quarantined_by_rule=by_rule)


EXPLORATION_SCHEMA = {
    "org_id": pl.String, "task_type": pl.String, "sessions": pl.Int64, "explored": pl.Int64,
    "in_experiments": pl.Int64, "from_admissions": pl.Int64, "share": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "rate_low": pl.Float64, "rate_high": pl.Float64, "status": pl.String,
}


def build_exploration_share(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> pl.DataFrame:
    """Rebuild ``exploration_share``: per organization and task type, the share of sessions that
    explored, its 95% Wilson interval, the configured range and the status; returns the rows."""
    counts = con.execute(load_sql("funnel/count_explored_sessions")).pl()
    rows = []
    for r in counts.iter_rows(named=True):
        p = budgets.policy(r["org_id"])
        s = exploration_share(
            r["explored"], r["sessions"], p.exploration_base_rate, p.exploration_uncertainty_multiplier, p.exploration_cap
        )
        rows.append({**r, **s._asdict()})
    batch = pl.DataFrame(rows, schema=EXPLORATION_SCHEMA, orient="row") if rows else pl.DataFrame(schema=EXPLORATION_SCHEMA)
    with transaction(con, exploration_batch=batch):
        con.execute(load_sql("funnel/create_exploration_share"))
    return batch
