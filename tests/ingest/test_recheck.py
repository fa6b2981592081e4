"""A re-check under new rules (a changed rule's SQL: a new fingerprint) re-reads every staged and
held row of the table, and rewrites and logs only the rows whose verdict changed: a staged row
that passes again is left as it is, so the tables derived from it have nothing to rebuild."""

from __future__ import annotations

import dagster as dg
import duckdb

from tests.ingest.test_cross_row_boundaries import DAY, _assignment, _experiment, _outcome, _session, _write
from zcl_assets.ingest.staging import stage_table
from zcl_assets.runner import run_night


def test_a_recheck_under_new_rules_rewrites_and_logs_only_the_rows_whose_verdict_changed(tmp_path, monkeypatch):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    _write(landing / "experiments" / DAY / "e.jsonl", [_experiment("e1")])
    _write(landing / "sessions" / DAY / "s.jsonl", [_session(s) for s in ("s1", "s2")])
    _write(landing / "assignments" / DAY / "a.jsonl", [_assignment(s, "09:00:00") for s in ("s1", "s2")])
    _write(landing / "outcomes" / DAY / "o.jsonl", [_outcome(s, "10:00:00") for s in ("s1", "s2", "ghost")])
    monkeypatch.setenv("ZCL_LANDING_DIR", str(landing))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(warehouse))
    with dg.DagsterInstance.ephemeral() as instance:
        assert all(r.success for r in run_night(instance, DAY))
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
