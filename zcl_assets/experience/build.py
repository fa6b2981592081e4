"""The experience stage: verification records and the experience fact table, kept per change.

Both tables derive from the staged tables (DESIGN section 5). A night rebuilds only the rows
its changes touch, read from the change log (``zcl_assets.ingest.changelog``):

- ``verification_records``: the outcomes of every session with a changed outcome or a changed
  session row (its task type picks the evaluation contract);
- ``experience``: every (experiment, session) pair of a changed assignment, session or
  verification record, every pair of an experiment whose registration changed, and, where a
  rule reads the whole unit (user-randomized experiments, one session per unit), every pair of
  the units involved.

The same SQL builds the rows in both cases, over temp views ``scope_*`` that hold either the
whole staged tables (the first build, or new code) or the rows in scope, so a night's rows are
those of a fresh build by construction. Each rebuild records the keys it rewrote in the change
log for the tables derived from it (the look's state, loop health).
"""

from __future__ import annotations

import duckdb
import polars as pl

from contracts.evaluation import EvaluationContract
from sql import load_sql
from zcl_assets.engine import DUCKDB, Engine
from zcl_assets.ingest import changelog
from zcl_assets.ingest.versions import code_fingerprint
from zcl_assets.warehouse import has_table, matching_rows, transaction

VERIFICATION_SQL = ("create_evaluation_contracts", "select_verification_records")
SESSION_TASK = "session_id, org_id, task_type"
"""What the verification records read of a session (temp relation ``scope_session_tasks``)."""
EXPERIENCE_SQL = ("select_experience_scope", "select_experience_exclusions", "insert_experience_unit_exclusions",
                  "select_experience", "delete_experience_quarantine", "insert_experience_quarantine")


def contracts_frame(contracts: list[EvaluationContract]) -> pl.DataFrame:
    """The evaluation contracts as the frame ``create_evaluation_contracts.sql`` reads."""
    return pl.DataFrame({
        "task_type": [c.task_type for c in contracts],
        "authoritative_kinds": [list(c.authoritative_kinds) for c in contracts],
        "source": [c.source for c in contracts],
    }, schema={"task_type": pl.String, "authoritative_kinds": pl.List(pl.String), "source": pl.String})


def _contracts_text(contracts: list[EvaluationContract]) -> str:
    return ";".join(f"{c.task_type}:{','.join(c.authoritative_kinds)}:{c.source}" for c in contracts)


def _verification_changes(con: duckdb.DuckDBPyConnection, contracts: list[EvaluationContract]) -> tuple[changelog.Changes, str]:
    """The changes ``verification_records`` has to read (all, the first time or under new rules), and its fingerprint."""
    fingerprint = code_fingerprint(_contracts_text(contracts), *(load_sql(n) for n in VERIFICATION_SQL))
    full = not has_table(con, "main.verification_records")
    return changelog.changes_since(con, "verification_records", "" if full else fingerprint), fingerprint


def _experience_changes(con: duckdb.DuckDBPyConnection, contracts: list[EvaluationContract]) -> tuple[changelog.Changes, str]:
    """The changes ``experience`` has to read (all, the first time or under new rules), and its fingerprint."""
    fingerprint = code_fingerprint(_contracts_text(contracts), *(load_sql(n) for n in (*VERIFICATION_SQL, *EXPERIENCE_SQL)))
    full = not has_table(con, "main.experience") or not has_table(con, "internal.experience_exclusions")
    return changelog.changes_since(con, "experience", "" if full else fingerprint), fingerprint


def verification_records_pending(con: duckdb.DuckDBPyConnection, contracts: list[EvaluationContract]) -> bool:
    """Whether :func:`build_verification_records` would rebuild anything now (read-only)."""
    return changelog.has_changes(con, _verification_changes(con, contracts)[0])


def experience_pending(con: duckdb.DuckDBPyConnection, contracts: list[EvaluationContract]) -> bool:
    """Whether :func:`build_experience` would rebuild anything now (read-only)."""
    return changelog.has_changes(con, _experience_changes(con, contracts)[0])


def build_verification_records(con: duckdb.DuckDBPyConnection, contracts: list[EvaluationContract],
                               engine: Engine = DUCKDB) -> bool:
    """Rebuild the verification records the changes touch (all of them the first time), their
    SQL run by ``engine`` (``zcl_assets.engine``).

    Returns:
        True when anything was rebuilt.
    """
    changes, fingerprint = _verification_changes(con, contracts)
    if not changelog.has_changes(con, changes):
        return False
    select = load_sql("select_verification_records")
    with transaction(con, evaluation_contracts_batch=contracts_frame(contracts)):
        engine.execute(con, load_sql("create_evaluation_contracts"))
        if changes.full:
            _rebuild_verification_records(con, select, engine)
        else:
            _replace_verification_records(con, changes, select, engine)
        changelog.advance(con, "verification_records", fingerprint, changes)
    return True


def _rebuild_verification_records(con: duckdb.DuckDBPyConnection, select: str, engine: Engine) -> None:
    """Every verification record built again; the sessions of the records it replaced and of
    those it wrote logged (a full rebuild also runs without new code, when most outcomes
    changed: then the tables derived from it rebuild only what the log names)."""
    con.execute("CREATE OR REPLACE TEMP VIEW scope_outcomes AS SELECT * FROM staged_outcomes")
    con.execute(f"CREATE OR REPLACE TEMP VIEW scope_session_tasks AS SELECT {SESSION_TASK} FROM staged_sessions")
    keys = "SELECT NULL AS experiment_id, session_id, partition_day AS day FROM verification_records"
    if has_table(con, "main.verification_records"):
        changelog.record(con, "verification_records", keys)
    engine.execute(con, f"CREATE OR REPLACE TABLE verification_records AS {select}")
    changelog.record(con, "verification_records", keys)


def _replace_verification_records(con: duckdb.DuckDBPyConnection, changes: changelog.Changes, select: str,
                                  engine: Engine) -> None:
    """The verification records of the sessions the changes name replaced, and those sessions logged."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE scope_sessions AS SELECT DISTINCT session_id FROM {changes.relation} "
                "WHERE session_id IS NOT NULL")
    con.execute("CREATE OR REPLACE TEMP VIEW scope_outcomes AS SELECT * FROM staged_outcomes "
                "WHERE session_id IN (SELECT session_id FROM scope_sessions)")
    # the sessions looked up by their ids: joined to the outcomes, every staged session was read
    con.execute(f"CREATE OR REPLACE TEMP VIEW scope_session_tasks AS SELECT {SESSION_TASK} FROM staged_sessions "
                "SEMI JOIN scope_sessions USING (session_id)")
    con.execute("DELETE FROM verification_records WHERE session_id IN (SELECT session_id FROM scope_sessions)")
    engine.execute(con, f"INSERT INTO verification_records {select}")
    changelog.record(con, "verification_records", "SELECT NULL AS experiment_id, session_id, NULL AS day FROM scope_sessions")


def build_experience(con: duckdb.DuckDBPyConnection, contracts: list[EvaluationContract], engine: Engine = DUCKDB) -> bool:
    """Rebuild the experience rows and exclusions the changes touch (all of them the first time),
    their SQL run by ``engine`` (``zcl_assets.engine``).

    Returns:
        True when anything was rebuilt.
    """
    con.execute(load_sql("create_experience_exclusions"))
    changes, fingerprint = _experience_changes(con, contracts)
    if not changelog.has_changes(con, changes):
        return False
    with transaction(con):
        if changes.full:
            _full_scope(con)
        else:
            _changed_scope(con, changes)
        _rebuild(con, changes.full, engine)
        changelog.advance(con, "experience", fingerprint, changes)
    return True


def _full_scope(con: duckdb.DuckDBPyConnection) -> None:
    """Scope views over everything; the old rows go."""
    con.execute("DROP TABLE IF EXISTS scope_assignments")
    con.execute("DROP TABLE IF EXISTS scope_verification")
    con.execute("CREATE OR REPLACE TEMP VIEW scope_assignments AS SELECT * FROM staged_assignments")
    con.execute("CREATE OR REPLACE TEMP VIEW scope_verification AS SELECT * FROM verification_records")
    _record_experience(con, "SELECT experiment_id, NULL AS session_id, CAST(NULL AS DATE) AS day FROM staged_experiments")
    con.execute("DELETE FROM quarantine WHERE stage = 'experience'")
    con.execute("DELETE FROM internal.experience_exclusions")
    con.execute("DROP TABLE IF EXISTS experience")


def _changed_scope(con: duckdb.DuckDBPyConnection, changes: changelog.Changes) -> None:
    """Scope views over the pairs the changes touch; their old rows go (their days recorded first)."""
    experiment_level = "source = 'staged_experiments'"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE changed AS SELECT CASE WHEN {experiment_level} THEN NULL ELSE session_id END AS session_id, "
        f"CASE WHEN {experiment_level} THEN experiment_id END AS experiment_id FROM {changes.relation}"
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE scope_pairs AS {load_sql('select_experience_scope')}")
    # materialized: the steps below read them several times, and they are small
    con.execute("CREATE OR REPLACE TEMP TABLE scope_assignments AS "
                + matching_rows("staged_assignments", "SEMI JOIN scope_pairs USING (experiment_id, session_id)"))
    con.execute("CREATE OR REPLACE TEMP TABLE scope_verification AS "
                + matching_rows("verification_records", "WHERE session_id IN (SELECT session_id FROM scope_pairs)"))
    _record_experience(con, "SELECT experiment_id, session_id, CAST(assigned_at AS DATE) AS day FROM experience "
                            "SEMI JOIN scope_pairs USING (experiment_id, session_id) "
                            "UNION ALL SELECT experiment_id, session_id, partition_day FROM internal.experience_exclusions "
                            "SEMI JOIN scope_pairs USING (experiment_id, session_id)")
    con.execute(load_sql("delete_experience_quarantine"))
    con.execute("DELETE FROM internal.experience_exclusions x USING scope_pairs p "
                "WHERE x.experiment_id = p.experiment_id AND x.session_id = p.session_id")
    con.execute("DELETE FROM experience x USING scope_pairs p WHERE x.experiment_id = p.experiment_id AND x.session_id = p.session_id")


def _rebuild(con: duckdb.DuckDBPyConnection, full: bool, engine: Engine) -> None:
    """The exclusions, quarantine rows and experience rows of the scope, written."""
    for step in ("select_experience_exclusions", "insert_experience_unit_exclusions"):
        engine.execute(con, load_sql(step))
    con.execute("INSERT INTO internal.experience_exclusions SELECT * FROM experience_exclusions")
    engine.execute(con, load_sql("insert_experience_quarantine"))
    select = load_sql("select_experience")
    engine.execute(con, f"CREATE TABLE experience AS {select}" if full else f"INSERT INTO experience {select}")
    _record_experience(con, "SELECT experiment_id, session_id, CAST(assigned_at AS DATE) AS day FROM scope_assignments")
    con.execute("DROP TABLE experience_exclusions")


def _record_experience(con: duckdb.DuckDBPyConnection, select_sql: str) -> None:
    changelog.record(con, "experience", select_sql)
