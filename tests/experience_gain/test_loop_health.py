"""Loop health per organization and week on a ledger small enough to count by hand."""

import datetime as dt

import duckdb
import pytest

from zcl_assets.experience_gain.build import build_loop_health
from zcl_assets.ingest import changelog
from zcl_assets.warehouse import ensure_schema

UTC = dt.UTC


def test_valid_verification_and_repeated_failure_rates():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE staged_sessions (session_id VARCHAR, org_id VARCHAR, user_id VARCHAR, task_type VARCHAR, started_at TIMESTAMPTZ)")
    con.execute(
        "CREATE TABLE verification_records (session_id VARCHAR, success BOOLEAN, recorded_at TIMESTAMPTZ, "
        "evaluator_id VARCHAR, evaluator_version VARCHAR, authoritative BOOLEAN)"
    )
    monday = dt.datetime(2026, 9, 7, 9, tzinfo=UTC)  # a Monday
    sessions = [  # id, user, task, hours after Monday 09:00, outcomes (success, authoritative)
        ("s1", "u1", "bugfix", 0, [(False, True)]),
        ("s2", "u1", "bugfix", 1, [(False, True)]),  # repeats u1's failure
        ("s3", "u1", "bugfix", 2, [(True, False)]),  # self report only: not verified
        ("s4", "u1", "bugfix", 3, [(False, True)]),  # previous verified (s2) failed: repeated
        ("s5", "u2", "bugfix", 4, [(False, True)]),  # first of u2: not repeated
        ("s6", "u2", "docs", 5, []),  # no outcome
        ("s7", "u2", "bugfix", 24 * 7, [(False, True)]),  # next week; previous verified of u2 (s5) failed
    ]
    for sid, user, task, hours, outcomes in sessions:
        con.execute("INSERT INTO staged_sessions VALUES (?, 'o1', ?, ?, ?)", [sid, user, task, monday + dt.timedelta(hours=hours)])
        for success, authoritative in outcomes:
            con.execute("INSERT INTO verification_records VALUES (?, ?, ?, 'e', '1', ?)",
                        [sid, success, monday + dt.timedelta(hours=hours, minutes=30), authoritative])
    ensure_schema(con)  # the change log and bookkeeping (the hand-made tables above are kept)
    rows = build_loop_health(con).rows()
    # week of 2026-09-07: 6 sessions, 5 with an outcome, 4 verified (s1, s2, s4, s5), all failures;
    # repeated: s2 and s4 -> 2/4.  Week of 2026-09-14: s7 verified failure, repeated -> 1/1.
    assert rows == [
        ("o1", dt.date(2026, 9, 7), 6, 5, 4, pytest.approx(4 / 6), 4, 2, pytest.approx(0.5)),
        ("o1", dt.date(2026, 9, 14), 1, 1, 1, pytest.approx(1.0), 1, 1, pytest.approx(1.0)),
    ]


def test_a_later_session_recomputes_its_days_only_and_gives_the_rows_of_a_build_over_every_day():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE staged_sessions (session_id VARCHAR, org_id VARCHAR, user_id VARCHAR, task_type VARCHAR, started_at TIMESTAMPTZ)")
    con.execute("CREATE TABLE verification_records (session_id VARCHAR, success BOOLEAN, recorded_at TIMESTAMPTZ, "
                "evaluator_id VARCHAR, evaluator_version VARCHAR, authoritative BOOLEAN)")
    ensure_schema(con)
    monday = dt.datetime(2026, 9, 7, 9, tzinfo=UTC)

    def land(sid, user, hours, success):
        at = monday + dt.timedelta(hours=hours)
        con.execute("INSERT INTO staged_sessions VALUES (?, 'o1', ?, 'bugfix', ?)", [sid, user, at])
        con.execute("INSERT INTO verification_records VALUES (?, ?, ?, 'e', '1', true)", [sid, success, at])
        changelog.record(con, "staged_sessions", f"SELECT NULL AS experiment_id, '{sid}' AS session_id, DATE '{at.date()}' AS day")

    land("s1", "u1", 0, False)
    build_loop_health(con)
    land("s2", "u1", 24 * 8, False)  # a week later: u1's previous verified session (s1, before it) failed
    rows = build_loop_health(con).rows()
    days = con.execute("SELECT day, repeated_failures FROM internal.loop_health_days ORDER BY day").fetchall()
    assert days == [(dt.date(2026, 9, 7), 0), (dt.date(2026, 9, 15), 1)]
    assert rows == [
        ("o1", dt.date(2026, 9, 7), 1, 1, 1, 1.0, 1, 0, 0.0),  # one verified failure, not a repeat
        ("o1", dt.date(2026, 9, 14), 1, 1, 1, 1.0, 1, 1, 1.0),
    ]
