"""The Spark warehouse's copies of the warehouse's tables: a file a day, rewritten only where a day
changed (``zcl_assets.portability.mirror``), always holding exactly the table's rows."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from contracts.schema import sql_literal
from zcl_assets.portability import mirror
from zcl_assets.portability.mirror import mirror_table
from zcl_assets.portability.spark_engine import exact_columns


@pytest.fixture
def con():
    with duckdb.connect() as connection:
        connection.execute("SET TimeZone = 'UTC'")
        connection.execute("CREATE TABLE staged_sessions (partition_day DATE, session_id VARCHAR, budget DOUBLE, n HUGEINT)")
        connection.execute(
            "INSERT INTO staged_sessions SELECT DATE '2026-10-01' + CAST(i % 3 AS INTEGER), 's' || i, i / 7, "
            "CAST(i AS HUGEINT) * 170141183460469231731687303715884105 FROM range(30) t(i)")
        yield connection


def _mirrored(con, table, folder) -> list[tuple]:
    """Mirror ``table`` and return the rows its files hold, sorted."""
    files = mirror_table(con, table, exact_columns(con, table), folder)
    listed = ", ".join(sql_literal(f) for f in files)
    return sorted(con.execute(f"SELECT * FROM read_parquet([{listed}])").fetchall())


def _table(con, table) -> list[tuple]:
    return sorted(con.execute(f"SELECT {exact_columns(con, table)} FROM {table}").fetchall())


def _stamps(folder) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("day-*.parquet")}


def test_a_table_with_days_is_copied_a_file_a_day_and_holds_its_rows(con, tmp_path):
    folder = tmp_path / "staged_sessions"
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")
    assert sorted(_stamps(folder)) == ["day-2026-10-01.parquet", "day-2026-10-02.parquet", "day-2026-10-03.parquet"]
    # 128-bit integers are copied exactly, as DECIMAL(38, 0)
    assert con.execute(f"SELECT max(n) FROM read_parquet('{folder}/day-*.parquet')").fetchone()[0] == \
        29 * 170141183460469231731687303715884105


def test_a_night_rewrites_the_changed_and_new_days_and_deletes_the_days_gone(con, tmp_path):
    folder = tmp_path / "staged_sessions"
    _mirrored(con, "staged_sessions", folder)
    before = _stamps(folder)
    con.execute("UPDATE staged_sessions SET budget = -1 WHERE session_id = 's4'")  # a correction on 10-02
    con.execute("DELETE FROM staged_sessions WHERE partition_day = DATE '2026-10-01'")  # a removed day
    con.execute("INSERT INTO staged_sessions VALUES (DATE '2026-10-04', 'new', 1.5, 7)")  # a new day
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")
    after = _stamps(folder)
    assert sorted(after) == ["day-2026-10-02.parquet", "day-2026-10-03.parquet", "day-2026-10-04.parquet"]
    assert after["day-2026-10-03.parquet"] == before["day-2026-10-03.parquet"]  # untouched day: not rewritten
    assert after["day-2026-10-02.parquet"] != before["day-2026-10-02.parquet"]
    # the same rows moved between two days of the same count are seen too
    con.execute("UPDATE staged_sessions SET partition_day = DATE '2026-10-03' WHERE session_id = 's5'")
    con.execute("UPDATE staged_sessions SET partition_day = DATE '2026-10-02' WHERE session_id = 's7'")
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")


def test_nothing_changed_rewrites_nothing(con, tmp_path):
    folder = tmp_path / "staged_sessions"
    _mirrored(con, "staged_sessions", folder)
    before = _stamps(folder)
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")
    assert _stamps(folder) == before


def test_new_columns_rewrite_every_day(con, tmp_path):
    folder = tmp_path / "staged_sessions"
    _mirrored(con, "staged_sessions", folder)
    before = _stamps(folder)
    con.execute("ALTER TABLE staged_sessions ADD COLUMN model VARCHAR DEFAULT 'm'")
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")
    assert all(_stamps(folder)[name] != stamp for name, stamp in before.items())


def test_a_pass_killed_after_writing_its_files_leaves_its_days_to_the_next(con, tmp_path, monkeypatch):
    # killed after the changed day's file is written, before the manifest takes its figures;
    # the table then goes back to what the manifest last said of that day: the day's file
    # (written from the changed rows) is rewritten all the same
    folder = tmp_path / "staged_sessions"
    _mirrored(con, "staged_sessions", folder)
    con.execute("UPDATE staged_sessions SET budget = budget + 1 WHERE partition_day = DATE '2026-10-02'")
    written = []
    original = mirror._write_manifest

    def killed_at_the_second(*args):
        written.append(args)
        if len(written) == 2:
            raise KeyboardInterrupt
        original(*args)

    monkeypatch.setattr(mirror, "_write_manifest", killed_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        mirror_table(con, "staged_sessions", exact_columns(con, "staged_sessions"), folder)
    monkeypatch.undo()
    con.execute("UPDATE staged_sessions SET budget = budget - 1 WHERE partition_day = DATE '2026-10-02'")
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")


def test_experience_is_copied_by_the_day_of_its_assignment_and_a_frame_whole(con, tmp_path):
    con.execute("CREATE TABLE experience AS SELECT 's' || i AS session_id, "
                "TIMESTAMPTZ '2026-10-01 23:30:00+00' + INTERVAL (i) HOUR AS assigned_at FROM range(5) t(i)")
    assert _mirrored(con, "experience", tmp_path / "experience") == _table(con, "experience")
    assert sorted(_stamps(tmp_path / "experience")) == ["day-2026-10-01.parquet", "day-2026-10-02.parquet"]
    con.execute("CREATE TEMP TABLE scope_sessions AS SELECT DATE '2026-10-01' AS partition_day, 's1' AS session_id")
    assert _mirrored(con, "scope_sessions", tmp_path / "scope_sessions") == [(dt.date(2026, 10, 1), "s1")]
    assert [p.name for p in (tmp_path / "scope_sessions").iterdir()] == ["data.parquet"]


def test_an_empty_table_is_its_columns(con, tmp_path):
    con.execute("DELETE FROM staged_sessions")
    folder = tmp_path / "staged_sessions"
    assert _mirrored(con, "staged_sessions", folder) == []
    files = mirror_table(con, "staged_sessions", exact_columns(con, "staged_sessions"), folder)
    assert [c for c, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{files[0]}')").fetchall()] == [
        "partition_day", "session_id", "budget", "n"]


def test_new_columns_and_a_day_gone_in_one_night_leave_no_file_of_that_day(con, tmp_path):
    folder = tmp_path / "staged_sessions"
    _mirrored(con, "staged_sessions", folder)
    con.execute("ALTER TABLE staged_sessions ADD COLUMN model VARCHAR DEFAULT 'm'")
    con.execute("DELETE FROM staged_sessions WHERE partition_day = DATE '2026-10-01'")
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")
    assert sorted(_stamps(folder)) == ["day-2026-10-02.parquet", "day-2026-10-03.parquet"]


def test_a_day_whose_file_was_deleted_is_written_again(con, tmp_path):
    folder = tmp_path / "staged_sessions"
    _mirrored(con, "staged_sessions", folder)
    (folder / "day-2026-10-02.parquet").unlink()
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")


def test_a_folder_whose_name_holds_a_quote_is_written(con, tmp_path):
    folder = tmp_path / "o'brien [1]" / "staged_sessions"
    assert _mirrored(con, "staged_sessions", folder) == _table(con, "staged_sessions")
