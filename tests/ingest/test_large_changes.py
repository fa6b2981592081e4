"""Changes that touch most of a table.

A re-check under new rules (a changed rule's SQL: a new fingerprint) re-reads every staged and
held row of the table, and rewrites and logs only the rows whose verdict changed: a staged row
that passes again is left as it is, so the tables derived from it have nothing to rebuild. A
table whose source changed nearly whole rebuilds in full, and still logs every key it removed.
"""

from __future__ import annotations

import dagster as dg
import duckdb

from contracts.evaluation import load_evaluation_contracts
from tests.ingest.test_cross_row_boundaries import DAY, _assignment, _experiment, _outcome, _session, _write
from zcl_assets.experience.build import build_experience, build_verification_records
from zcl_assets.ingest import changelog
from zcl_assets.ingest.staging import stage_table
from zcl_assets.runner import run_night


def _night(tmp_path, monkeypatch):
    """A warehouse after one night: sessions s1 and s2, assigned and verified; an outcome of a
    session that never lands ("ghost"), held."""
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    _write(landing / "experiments" / DAY / "e.jsonl", [_experiment("e1")])
    _write(landing / "sessions" / DAY / "s.jsonl", [_session(s) for s in ("s1", "s2")])
    _write(landing / "assignments" / DAY / "a.jsonl", [_assignment(s, "09:00:00") for s in ("s1", "s2")])
    _write(landing / "outcomes" / DAY / "o.jsonl", [_outcome(s, "10:00:00") for s in ("s1", "s2", "ghost")])
    monkeypatch.setenv("ZCL_LANDING_DIR", str(landing))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(warehouse))
    with dg.DagsterInstance.ephemeral() as instance:
        assert all(r.success for r in run_night(instance, DAY))
    return warehouse


def test_a_recheck_under_new_rules_rewrites_and_logs_only_the_rows_whose_verdict_changed(tmp_path, monkeypatch):
    warehouse = _night(tmp_path, monkeypatch)
    staged = "SELECT partition_day, source_file, source_row, session_id FROM staged_outcomes ORDER BY ALL"
    with duckdb.connect(str(warehouse)) as con:
        before = con.execute(staged).fetchall()
        assert [r[3] for r in before] == ["s1", "s2"]  # "ghost" never lands: its outcome is held
        con.execute("UPDATE internal.change_cursors SET fingerprint = 'older rules' WHERE consumer = 'staged_outcomes'")
        last = con.execute("SELECT max(seq) FROM internal.change_log").fetchone()[0] or 0
        assert stage_table(con, "outcomes").rechecked
        assert con.execute(staged).fetchall() == before
        assert con.execute("SELECT session_id FROM internal.held_outcomes").fetchall() == [("ghost",)]
        assert con.execute("SELECT rule, json_extract_string(record, '$.session_id') FROM quarantine "
                           "WHERE source_table = 'outcomes'").fetchall() == [("unknown_session", "ghost")]
        # the held row is rewritten (its reason may have changed), the rows staged again are not
        logged = con.execute("SELECT DISTINCT session_id FROM internal.change_log WHERE seq > ? AND source = 'staged_outcomes'",
                             [last]).fetchall()
        assert logged == [("ghost",)]


def test_a_full_rebuild_forced_by_a_large_change_logs_the_keys_it_removed(tmp_path, monkeypatch):
    warehouse = _night(tmp_path, monkeypatch)
    contracts = load_evaluation_contracts()
    experience = "SELECT session_id, verified FROM experience ORDER BY session_id"
    with duckdb.connect(str(warehouse)) as con:
        assert con.execute(experience).fetchall() == [("s1", True), ("s2", True)]
        # s1's outcome removed, as staging does when a corrected file drops it
        con.execute("DELETE FROM staged_outcomes WHERE session_id = 's1'")
        changelog.record(con, "staged_outcomes", "SELECT NULL AS experiment_id, 's1' AS session_id, NULL AS day")
        last = con.execute("SELECT max(seq) FROM internal.change_log").fetchone()[0]
        monkeypatch.setattr(changelog, "FULL_REBUILD_ROWS", 1)  # 1 changed key of the 1 row left: in full
        assert build_verification_records(con, contracts)
        logged = con.execute("SELECT DISTINCT session_id FROM internal.change_log WHERE seq > ? ORDER BY ALL", [last]).fetchall()
        assert logged == [("s1",), ("s2",)]  # s1's record is gone: the experience must hear of it
        monkeypatch.setattr(changelog, "FULL_REBUILD_ROWS", 1_000_000)  # the experience itself incremental
        assert build_experience(con, contracts)
        assert con.execute(experience).fetchall() == [("s1", False), ("s2", True)]
