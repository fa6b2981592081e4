"""Build the funnel tables in the warehouse (DuckDB SQL under ``sql/funnel/``).

Every table is rebuilt from the whole staged ledger in one transaction, so materializing
again gives the same rows, never doubled ones, and a failed build leaves the previous rows.
A night rebuilds them only when the ledger or the budgets changed since the last build (the
change log, ``zcl_assets.ingest.changelog``): the ledger is replayed per admission, and its
size follows the admissions, not the sessions.
"""

from __future__ import annotations

from typing import NamedTuple

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.funnel.budgets import Budgets
from zcl_assets.funnel.exploration import exploration_share
from zcl_assets.funnel.lifecycle import OUTCOMES, stage_order_frame, transitions_frame
from zcl_assets.ingest import changelog
from zcl_assets.ingest.versions import code_fingerprint
from zcl_assets.warehouse import has_table, transaction


class FunnelBuild(NamedTuple):
    """What one build wrote: events replayed, admissions, quarantined events by rule."""

    events: int
    admissions: int
    quarantined_by_rule: dict[str, int]


def build_funnel(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> FunnelBuild:
    """Replay ``staged_admission_events`` and rebuild ``admission_states``,
    ``funnel_stage_counts``, ``information_yield``, ``arm_repeats`` and the ``funnel``
    quarantine rows, with the caps and eligible arms of ``budgets``.

    Nothing is rebuilt when neither the ledger nor ``budgets`` changed since the last build.
    """
    frames = _funnel_frames(budgets)
    changes, fingerprint = _funnel_changes(con, budgets, frames)
    if changelog.has_changes(con, changes):
        _replay(con, frames, budgets.defaults, changes, fingerprint)
    events = con.execute("SELECT count(*) FROM staged_admission_events").fetchone()[0]
    admissions = con.execute("SELECT count(*) FROM admission_states").fetchone()[0]
    by_rule = dict(con.execute("SELECT rule, count(*) FROM quarantine WHERE stage = 'funnel' GROUP BY ALL ORDER BY ALL").fetchall())
    return FunnelBuild(events=int(events), admissions=int(admissions), quarantined_by_rule=by_rule)


def funnel_pending(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> bool:
    """Whether :func:`build_funnel` with ``budgets`` would replay the ledger now (read-only)."""
    return changelog.has_changes(con, _funnel_changes(con, budgets, _funnel_frames(budgets))[0])


def _funnel_frames(budgets: Budgets) -> dict[str, pl.DataFrame]:
    """The lifecycle and the budgets as the tables the funnel's SQL joins."""
    return {
        "lifecycle_transitions": transitions_frame(),
        "lifecycle_stage_order": stage_order_frame(),
        "budget_caps": budgets.caps_frame(),
        "eligible_arms": budgets.eligible_arms_frame(),
    }


def _funnel_changes(con: duckdb.DuckDBPyConnection, budgets: Budgets,
                    frames: dict[str, pl.DataFrame]) -> tuple[changelog.Changes, str]:
    """The ledger's changes the funnel has to replay (all of it, the first time or under other
    SQL, lifecycle or budgets: the default caps are parameters, not in ``frames``), and its fingerprint."""
    fingerprint = code_fingerprint(*(load_sql(f"funnel/{n}") for n in _FUNNEL_SQL), repr(budgets.defaults), *(
        str(f.sort(f.columns).to_dicts()) for f in frames.values()))
    return changelog.changes_since(con, "funnel", fingerprint if has_table(con, "main.admission_states") else ""), fingerprint


_FUNNEL_SQL = ("select_admission_transitions", "create_admission_states", "delete_funnel_quarantine", "insert_funnel_quarantine",
               "create_funnel_stage_counts", "create_information_yield", "find_repeated_arms", "create_arm_repeats")


def _replay(con: duckdb.DuckDBPyConnection, frames: dict[str, pl.DataFrame], defaults, changes: changelog.Changes,
            fingerprint: str) -> None:
    """Replay the whole ledger into the funnel tables, in one transaction."""
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
        changelog.advance(con, "funnel", fingerprint, changes)


EXPLORATION_SCHEMA = {
    "org_id": pl.String, "task_type": pl.String, "sessions": pl.Int64, "explored": pl.Int64,
    "in_experiments": pl.Int64, "from_admissions": pl.Int64, "share": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "rate_low": pl.Float64, "rate_high": pl.Float64, "status": pl.String,
}


def build_exploration_share(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> pl.DataFrame:
    """Rebuild ``exploration_share``: per organization and task type, the share of sessions that
    explored, its 95% Wilson interval, the configured range and the status; returns the rows."""
    _count_explored_days(con)
    batch = exploration_rows(con, budgets)
    with transaction(con, exploration_batch=batch):
        con.execute(load_sql("funnel/create_exploration_share"))
    return batch


def exploration_rows(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> pl.DataFrame:
    """The rows of ``exploration_share`` from the stored daily counts and ``budgets``, by organization and task type."""
    counts = con.execute(load_sql("funnel/count_explored_sessions")).pl()
    rows = []
    for r in counts.iter_rows(named=True):
        p = budgets.policy(r["org_id"])
        s = exploration_share(
            r["explored"], r["sessions"], p.exploration_base_rate, p.exploration_uncertainty_multiplier, p.exploration_cap
        )
        rows.append({**r, **s._asdict()})
    return pl.DataFrame(rows, schema=EXPLORATION_SCHEMA, orient="row") if rows else pl.DataFrame(schema=EXPLORATION_SCHEMA)


def exploration_share_pending(con: duckdb.DuckDBPyConnection, budgets: Budgets) -> bool:
    """Whether :func:`build_exploration_share` with ``budgets`` would change anything now (read-only):
    sessions changed since the last count, or the stored rows are not those the counts give (other
    budgets, other code, or a build stopped between the counts and the table)."""
    if not (has_table(con, "main.exploration_share") and has_table(con, "internal.explored_session_days")):
        return True
    if changelog.has_changes(con, _explored_days_changes(con)[0]):
        return True
    keys = ["org_id", "task_type"]
    stored = con.execute("SELECT * FROM exploration_share").pl().sort(keys)
    return stored.schema != EXPLORATION_SCHEMA or not stored.equals(exploration_rows(con, budgets).sort(keys))


def _explored_days_changes(con: duckdb.DuckDBPyConnection) -> tuple[changelog.Changes, str]:
    """The sessions' changes the daily counts have to read (all of them the first time or under other SQL), and the fingerprint."""
    fingerprint = code_fingerprint(load_sql("funnel/aggregate_explored_session_days"))
    return changelog.changes_since(con, "exploration_share", fingerprint), fingerprint


def _count_explored_days(con: duckdb.DuckDBPyConnection) -> None:
    """Count the sessions of the landing days whose sessions changed since the last count (every
    day the first time) into ``internal.explored_session_days``."""
    con.execute(load_sql("funnel/create_explored_session_days"))
    changes, fingerprint = _explored_days_changes(con)
    if not changelog.has_changes(con, changes):
        return
    days = con.execute("SELECT DISTINCT partition_day AS day FROM staged_sessions" if changes.full else
                       f"SELECT DISTINCT day FROM {changes.relation} WHERE day IS NOT NULL").pl()
    with transaction(con, explored_days=days):
        if changes.full:
            con.execute("DELETE FROM internal.explored_session_days")
        con.execute("DELETE FROM internal.explored_session_days WHERE day IN (SELECT day FROM explored_days)")
        con.execute(f"INSERT INTO internal.explored_session_days BY NAME {load_sql('funnel/aggregate_explored_session_days')}")
        changelog.advance(con, "exploration_share", fingerprint, changes)
