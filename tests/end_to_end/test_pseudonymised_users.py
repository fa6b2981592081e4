"""User ids that are e-mail addresses: refused without a pseudonym key, staged as keyed
pseudonyms with one, and then the joins (sessions, assignments, experience, users per arm)
work as with any other id."""

import duckdb

from tests.end_to_end.test_bad_input import GOOD_EXPERIMENT, _write
from tests.warehouse_checks import every_table, run_one_night
from zcl_assets.privacy.pseudonyms import KEY_ENV, pseudonym

DAY = "2026-10-02"
KEY = "a-secret-of-at-least-thirty-two-bytes!"
USERS = ["ada@example.com", "alan@example.org", "grace@example.net"]


def _land(landing):
    registration = dict(GOOD_EXPERIMENT, randomization_unit="user")
    _write(landing / "experiments" / "2026-10-01" / "reg.jsonl", [registration])
    sessions, assignments, outcomes = [], [], []
    for i in range(6):
        user, arm, session = USERS[i % 3], ("control", "treatment")[i % 3 % 2], f"s{i}"
        sessions.append({"schema_version": 1, "session_id": session, "org_id": "o", "user_id": user, "task_type": "t",
                         "started_at": f"{DAY}T09:00:00+00:00", "experiment_id": "e1", "delivered_arm": arm})
        assignments.append({"schema_version": 1, "session_id": session, "experiment_id": "e1", "arm": arm, "unit_id": user,
                            "assigned_at": f"{DAY}T09:00:00+00:00"})
        outcomes.append({"schema_version": 1, "session_id": session, "success": i % 2 == 0, "recorded_at": f"{DAY}T10:00:00+00:00",
                         "evaluator_id": "ev", "evaluator_version": "1", "evaluator_kind": "evaluator"})
    _write(landing / "sessions" / DAY / "s.jsonl", sessions)
    _write(landing / "assignments" / DAY / "a.jsonl", assignments)
    _write(landing / "outcomes" / DAY / "o.jsonl", outcomes)


def test_email_user_ids_are_refused_without_a_key(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    _land(tmp_path / "landing")
    run_one_night(tmp_path / "landing", tmp_path / "w.duckdb", "2026-10-03")
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        refused = con.execute("SELECT source_table, rule, count(*), min(reason) FROM quarantine WHERE stage = 'contract' "
                              "GROUP BY ALL ORDER BY ALL").fetchall()
    assert [(t, r, n) for t, r, n, _ in refused] == [
        ("assignments", "sensitive_value", 6), ("outcomes", "unknown_session", 6), ("sessions", "sensitive_value", 6)]
    assert refused[2][3] == ("sensitive_value: user_id holds a secret or personal datum (the record shows its kind), "
                             "which is never staged; set ZCL_PSEUDONYM_KEY to pseudonymise user_id")
    assert not any(user in repr(every_table(tmp_path / "w.duckdb")) for user in USERS)


def test_email_user_ids_are_staged_as_pseudonyms_and_join(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    _land(tmp_path / "landing")
    run_one_night(tmp_path / "landing", tmp_path / "w.duckdb", "2026-10-03")
    expected = {pseudonym(KEY.encode(), u) for u in USERS}
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        users = {r for (r,) in con.execute("SELECT user_id FROM staged_sessions").fetchall()}
        units = {r for (r,) in con.execute("SELECT unit_id FROM staged_assignments").fetchall()}
        joined = con.execute("SELECT count(*), count(DISTINCT unit_id) FROM experience WHERE user_id = unit_id").fetchone()
        quarantined = con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
    assert users == units == expected  # the same pseudonym in both tables, from the same key
    assert joined == (6, 3) and quarantined == 0
    assert not any(user in repr(every_table(tmp_path / "w.duckdb")) for user in USERS)
