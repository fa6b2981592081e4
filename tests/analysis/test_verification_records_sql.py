"""The verification SQL: each outcome is judged by its own task type's evaluation contract.

Only the default contract (``task_type: "*"``) ships today, so the pipeline's fixtures never
see a task type with its own contract. Here one is added beside the shipped default: a
``code_review`` task type for which only a human decides, while the default trusts an
evaluator or a human. Expected verdicts are written out per outcome below.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from contracts.evaluation import load_evaluation_contracts
from sql import load_sql

UTC = dt.timezone.utc
AT = dt.datetime(2026, 10, 1, 12, tzinfo=UTC)

SESSIONS = [("s-review", "code_review"), ("s-bugfix", "bugfix")]
OUTCOMES = [  # session, evaluator kind, expected: (authoritative, contract)
    ("s-review", "evaluator", (False, "code_review.yaml")),  # the task type's own contract: humans only
    ("s-review", "human", (True, "code_review.yaml")),
    ("s-bugfix", "evaluator", (True, "default.yaml")),  # no contract of its own: the default
    ("s-bugfix", "self_report", (False, "default.yaml")),
    ("s-unknown", "evaluator", (True, "default.yaml")),  # session not staged: null task type, the default
    ("s-unknown", "heuristic", (False, "default.yaml")),
]


def verification_records() -> dict[tuple[str, str], tuple[bool, str]]:
    shipped = load_evaluation_contracts()
    assert [(c.task_type, c.authoritative_kinds, c.source) for c in shipped] == [
        ("*", ("evaluator", "human"), "default.yaml")]  # the default this test's verdicts assume
    batch = pl.DataFrame({
        "task_type": ["*", "code_review"],
        "authoritative_kinds": [list(shipped[0].authoritative_kinds), ["human"]],
        "source": [shipped[0].source, "code_review.yaml"],
    })
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("session_rows", pl.DataFrame(
        [{"session_id": s, "org_id": "org", "task_type": t} for s, t in SESSIONS]))
    con.execute("CREATE TABLE staged_sessions AS SELECT * FROM session_rows")
    con.register("outcome_rows", pl.DataFrame(
        [{"session_id": s, "evaluator_id": f"ev-{i}", "evaluator_version": 1, "evaluator_kind": kind,
          "recorded_at": AT + dt.timedelta(minutes=i), "success": 1.0, "time_minutes": 3.0, "tokens": 100.0,
          "score": 0.5, "partition_day": AT.date(), "source_file": "outcomes.jsonl", "source_row": i}
         for i, (s, kind, _) in enumerate(OUTCOMES)],
        schema_overrides={"recorded_at": pl.Datetime("us", "UTC")}))
    con.execute("CREATE TABLE staged_outcomes AS SELECT * FROM outcome_rows")
    con.register("evaluation_contracts_batch", batch)
    con.execute(load_sql("create_evaluation_contracts"))
    con.execute("CREATE TEMP VIEW scope_outcomes AS SELECT * FROM staged_outcomes")
    con.execute("CREATE TEMP VIEW scope_session_tasks AS SELECT * FROM staged_sessions")
    con.execute(f"CREATE TABLE verification_records AS {load_sql('select_verification_records')}")
    rows = con.execute(
        "SELECT session_id, evaluator_kind, authoritative, contract FROM verification_records").fetchall()
    con.close()
    return {(s, kind): (authoritative, contract) for s, kind, authoritative, contract in rows}


def test_a_task_type_with_its_own_contract_is_judged_by_it_and_the_others_by_the_default():
    assert verification_records() == {(s, kind): expected for s, kind, expected in OUTCOMES}
