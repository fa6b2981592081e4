"""The change log: a consumer reads each change once, rebuilds in full without a cursor or with
new code, and rows every consumer has read are pruned (and only those)."""

import duckdb

from zcl_assets.ingest import changelog
from zcl_assets.warehouse import ensure_schema


def _con():
    con = duckdb.connect()
    ensure_schema(con)
    return con


def _record(con, source, session):
    return changelog.record(con, source, f"SELECT 'e' AS experiment_id, '{session}' AS session_id, DATE '2026-01-01' AS day")


def _sessions(con, changes):
    return sorted(r[0] for r in con.execute(f"SELECT session_id FROM {changes.relation}").fetchall())


def test_a_consumer_reads_each_change_once_and_only_of_its_sources():
    con = _con()
    first = changelog.changes_since(con, "verification_records", "v1")
    assert first.full and _sessions(con, first) == []  # no cursor yet: a full rebuild
    changelog.advance(con, "verification_records", "v1", first)
    _record(con, "staged_outcomes", "s1")
    _record(con, "staged_assignments", "s2")  # not a source of verification_records
    _record(con, "staged_sessions", "s3")
    changes = changelog.changes_since(con, "verification_records", "v1")
    assert not changes.full and _sessions(con, changes) == ["s1", "s3"]
    changelog.advance(con, "verification_records", "v1", changes)
    again = changelog.changes_since(con, "verification_records", "v1")
    assert _sessions(con, again) == [] and not changelog.has_changes(con, again)


def test_new_code_rebuilds_in_full():
    con = _con()
    changelog.advance(con, "experience", "v1", changelog.changes_since(con, "experience", "v1"))
    assert changelog.changes_since(con, "experience", "v2").full


def test_pruning_keeps_what_some_consumer_has_not_read():
    con = _con()
    for consumer in ("verification_records", "loop_health"):
        changelog.advance(con, consumer, "v1", changelog.changes_since(con, consumer, "v1"))
    _record(con, "staged_sessions", "s1")  # read by both
    changelog.advance(con, "verification_records", "v1", changelog.changes_since(con, "verification_records", "v1"))
    assert changelog.prune(con) == 0  # loop_health has not read it
    assert _sessions(con, changelog.changes_since(con, "loop_health", "v1")) == ["s1"]
    changelog.advance(con, "loop_health", "v1", changelog.changes_since(con, "loop_health", "v1"))
    # every consumer with a cursor that reads staged_sessions has read it now (those without
    # one rebuild in full when they first run, so they hold nothing back)
    assert changelog.prune(con) == 1
    assert con.execute("SELECT count(*) FROM internal.change_log").fetchone()[0] == 0


def _logged(con):
    return con.execute("SELECT count(*) FROM internal.change_log").fetchone()[0]


def test_the_first_load_logs_nothing_no_consumer_would_read():
    con = _con()
    _record(con, "staged_sessions", "s1")  # no consumer has a cursor: each rebuilds in full
    assert _logged(con) == 0
    assert changelog.changes_since(con, "loop_health", "v1").full
    changelog.advance(con, "experience", "v1", changelog.changes_since(con, "experience", "v1"))
    _record(con, "staged_outcomes", "s2")  # experience does not read staged_outcomes
    assert _logged(con) == 0
    _record(con, "staged_sessions", "s3")  # experience reads it; loop_health, without a cursor, will not
    assert _logged(con) == 1
    assert _sessions(con, changelog.changes_since(con, "experience", "v1")) == ["s3"]


def test_a_consumer_rebuilds_in_full_when_a_source_changed_nearly_whole(monkeypatch):
    monkeypatch.setattr(changelog, "FULL_REBUILD_ROWS", 3)  # 1,000,000 in a night
    con = _con()
    con.execute("DROP TABLE staged_outcomes")  # six rows of it suffice here
    con.execute("CREATE TABLE staged_outcomes AS SELECT 's' || range AS session_id FROM range(6)")
    changelog.advance(con, "verification_records", "v1", changelog.changes_since(con, "verification_records", "v1"))
    for session in ("s0", "s1", "s2"):  # 3 keys of 6 rows: not more than half
        _record(con, "staged_outcomes", session)
    _record(con, "staged_sessions", "s9")  # 1 key of an empty table: under the floor
    changes = changelog.changes_since(con, "verification_records", "v1")
    assert not changes.full and _sessions(con, changes) == ["s0", "s1", "s2", "s9"]
    _record(con, "staged_outcomes", "s3")  # 4 keys of 6 rows: a full rebuild, which reads no key
    changes = changelog.changes_since(con, "verification_records", "v1")
    assert changes.full and _sessions(con, changes) == []
    changelog.advance(con, "verification_records", "v1", changes)
    assert changelog.changes_since(con, "verification_records", "v1") == changelog.Changes(False, changes.upto,
                                                                                             "changes_verification_records")
    monkeypatch.setattr(changelog, "FULL_REBUILD_ROWS", 5)  # the same 4 keys of 6 rows, under the floor
    for session in ("s0", "s1", "s2", "s3"):
        _record(con, "staged_outcomes", session)
    assert not changelog.changes_since(con, "verification_records", "v1").full
