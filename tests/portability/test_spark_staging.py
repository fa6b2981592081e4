"""Staging with its candidates computed by Spark's tasks (local mode) gives the tables DuckDB gives.

The bad-input catalogue of ``tests/end_to_end/test_bad_input.py`` (every kind of bad row and bad
file), with JSON Lines whose lines are hard to number or to split (CRLF, a byte-order mark,
blank and white-space lines, bytes that are not UTF-8, a name Hadoop would read as a glob, the
same bytes landed under two names), is loaded and staged twice, once with the DuckDB engine and
once with the Spark engine, and the staged and held tables and every quarantine row (rule,
reason, record and lineage) are compared row for row.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from contracts.tables import CONTRACTS
from resources import LandingStore, Warehouse
from tests.end_to_end.test_bad_input import DAY, write_bad_landing
from tests.warehouse_checks import conservation_gaps, exact_rows, row_differences
from zcl_assets.engine import DUCKDB
from zcl_assets.ingest.archive import load_table
from zcl_assets.ingest.staging import stage_table
from zcl_assets.portability import spark_staging
from zcl_assets.portability.spark_engine import SparkEngine
from zcl_assets.privacy.pseudonyms import KEY_ENV, pseudonym
from zcl_assets.privacy.redaction import PATTERNS_ENV

SESSION = {"schema_version": 1, "org_id": "o", "user_id": "u", "task_type": "t", "started_at": f"{DAY}T09:00:00+00:00",
           "ended_at": f"{DAY}T09:30:00+00:00", "experiment_id": "e1", "delivered_arm": "control"}


def _session(session_id: str, **changes) -> bytes:
    return json.dumps({**SESSION, "session_id": session_id, **changes}).encode()


def write_hard_lines(landing) -> None:
    """JSON Lines of sessions whose reading can go wrong: each good line stages, each bad one is quarantined."""
    day = landing / "sessions" / DAY
    day.mkdir(parents=True, exist_ok=True)
    (day / "crlf.jsonl").write_bytes(_session("c1") + b"\r\n\r\n" + _session("c2") + b"\r\r\n" + _session("c3") + b"\r")
    (day / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + _session("b1") + b"\n \t\n\xc2\xa0\xe2\x80\x83\n" + _session("b2"))
    (day / "latin1.jsonl").write_bytes(_session("l1") + b"\n" + _session("l2", user_id="caf\xe9").replace(b"\\u00e9", b"\xe9") + b"\n")
    (day / "glob[1].jsonl").write_bytes(_session("g1") + b"\n" + b'{"session_id": "g2", "x": "a\rb"}\n')
    (day / "blank_lines.jsonl").write_bytes(b"\n\n" + _session("n1", ended_at="nope") + b"\n\n" + _session("n2") + b"\n")
    (day / "copy.jsonl").write_bytes((day / "blank_lines.jsonl").read_bytes())  # same bytes, another name: duplicate keys
    (day / "empty.jsonl").write_bytes(b"")


def _stage_everything(warehouse: Warehouse, landing, engine) -> None:
    with warehouse.connect() as con:
        for table in CONTRACTS:
            load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, table)
        for table in CONTRACTS:
            stage_table(con, table, engine=engine)


@pytest.fixture(scope="module")
def staged(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("spark_staging")
    landing = root / "landing"
    write_bad_landing(landing)
    write_hard_lines(landing)
    duck, on_spark = Warehouse(path=str(root / "duckdb.duckdb")), Warehouse(path=str(root / "spark.duckdb"))
    lake = root / "lake"
    _stage_everything(duck, landing, DUCKDB)
    _stage_everything(on_spark, landing, SparkEngine(master="local[2]", location=str(lake)))
    return duck, on_spark, lake


def _compared(warehouse: Warehouse) -> dict[str, object]:
    tables = [c.staged_table for c in CONTRACTS.values()] + [c.held_table for c in CONTRACTS.values()]
    with duckdb.connect(warehouse.path, read_only=True) as con:
        out = {t: exact_rows(con, t) for t in tables}
        out["quarantine"] = exact_rows(con, "quarantine", ("quarantined_at",))
    return out


def test_staging_on_spark_gives_the_staged_tables_and_quarantine_of_duckdb(staged):
    duck, on_spark, _ = staged
    left, right = _compared(duck), _compared(on_spark)
    assert {t: d for t in left if (d := row_differences(left[t], right[t]))} == {}
    with duckdb.connect(on_spark.path, read_only=True) as con:
        assert conservation_gaps(con) == {}
        rules = dict(con.execute("SELECT rule, count(*) FROM quarantine WHERE source_table = 'sessions' GROUP BY ALL").fetchall())
        staged_sessions = {r for (r,) in con.execute("SELECT session_id FROM staged_sessions").fetchall()}
    # the hard lines were read: every good line staged, each bad one with its rule
    assert {"c1", "c2", "c3", "b1", "b2", "l1", "g1", "n2"} <= staged_sessions
    assert rules["invalid_encoding"] == 1 and rules["bad_type"] == 2 and rules["duplicate_key"] == 1
    assert rules["malformed_record"] == 1  # g2: a carriage return kept inside a line breaks its JSON


def test_spark_tasks_computed_the_candidates_of_every_landed_row(staged, spark):
    # every landed row of every file (JSON Lines, CSV, Parquet, a file no reader takes) is a
    # candidate row written by Spark's tasks; DuckDB's night put the same rows in the staged,
    # held or quarantine tables (the contract's quarantine and the cross-row rules')
    duck, _, lake = staged
    with duckdb.connect(duck.path, read_only=True) as con:
        landed = {t for (t,) in con.execute("SELECT DISTINCT table_name FROM landing_manifest").fetchall()}
    assert landed == {p.name for p in (lake / "_candidates").iterdir()} and len(landed) >= 5
    for table in landed:
        contract = CONTRACTS[table]
        on_spark = {(str(r["partition_day"]), r["source_file"], r["source_row"])
                    for r in spark.read.parquet(str(lake / "_candidates" / table)).collect()}
        with duckdb.connect(duck.path, read_only=True) as con:
            on_duckdb = {(str(d), f, n) for d, f, n in con.execute(
                f"SELECT partition_day, source_file, source_row FROM {contract.staged_table} UNION ALL "
                f"SELECT partition_day, source_file, source_row FROM {contract.held_table} UNION ALL "
                "SELECT partition_day, source_file, source_row FROM quarantine WHERE source_table = $t AND stage = 'contract'",
                {"t": table}).fetchall()}
        assert on_spark == on_duckdb and on_spark, table
    assert {"broken.parquet", "good.parquet", "a.jsonl"} <= {
        r["source_file"] for r in spark.read.parquet(str(lake / "_candidates" / "assignments")).collect()}


def test_the_privacy_policy_reaches_sparks_tasks(spark, tmp_path, monkeypatch):
    # a pseudonym key and a pattern of the user's: user ids are pseudonymised and a match in
    # the free text of a refused row redacted by the tasks exactly as by DuckDB
    monkeypatch.setenv(KEY_ENV, "a-secret-of-at-least-thirty-two-bytes!")
    patterns = tmp_path / "patterns.yaml"
    patterns.write_text("patterns:\n  - kind: employee_id\n    regex: 'EMP-[0-9]{6}'\n")
    monkeypatch.setenv(PATTERNS_ENV, str(patterns))
    landing = tmp_path / "landing"
    day = landing / "sessions" / DAY
    day.mkdir(parents=True)
    (day / "s.jsonl").write_bytes(_session("p1", user_id="ada@example.com") + b"\n"
                                  + _session("p2", user_id="EMP-123456", ended_at="owner EMP-654321") + b"\n")
    found = []
    for name, engine in (("duckdb", DUCKDB), ("spark", SparkEngine(master="local[2]", location=str(tmp_path / "lake")))):
        warehouse = Warehouse(path=str(tmp_path / f"{name}.duckdb"))
        with warehouse.connect() as con:
            load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "sessions")
            assert stage_table(con, "sessions", engine=engine).engine == name  # who computed the candidates
            found.append((con.execute("SELECT session_id, user_id FROM staged_sessions ORDER BY ALL").fetchall(),
                          con.execute("SELECT source_row, rule, reason, record FROM quarantine ORDER BY ALL").fetchall()))
    assert found[0] == found[1]
    (staged_rows, quarantined) = found[1]
    assert staged_rows == [("p1", pseudonym(b"a-secret-of-at-least-thirty-two-bytes!", "ada@example.com"))]
    assert [(n, rule) for n, rule, _, _ in quarantined] == [(2, "bad_type")]
    assert "EMP-" not in repr(quarantined) and "<redacted:employee_id>" in quarantined[0][3]
    # and the tasks did it: their rows hold the pseudonym and the redacted record, nothing as landed
    written = spark.read.parquet(str(tmp_path / "lake" / "_candidates" / "sessions")).orderBy("source_row").collect()
    assert [r["user_id"] for r in written][:1] == [staged_rows[0][1]]
    assert "<redacted:employee_id>" in written[1]["__record"] and "@" not in repr(written) and "EMP-" not in repr(written)


def _stage_sessions_on_spark(tmp_path, content: bytes) -> tuple[object, list, list]:
    """Land ``content`` as one sessions file and stage it with the Spark engine: the result, the
    staged session ids and the quarantine's (row, rule)."""
    landing = tmp_path / "landing"
    (landing / "sessions" / DAY).mkdir(parents=True)
    (landing / "sessions" / DAY / "s.jsonl").write_bytes(content)
    warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    with warehouse.connect() as con:
        load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "sessions")
        result = stage_table(con, "sessions", engine=SparkEngine(master="local[2]", location=str(tmp_path / "lake")))
        return (result, con.execute("SELECT session_id FROM staged_sessions").fetchall(),
                con.execute("SELECT source_row, rule FROM quarantine").fetchall())


def test_when_sparks_tasks_cannot_run_the_files_are_staged_here(spark, tmp_path, monkeypatch, caplog):
    # an executor without the project's environment fails every task: the warning says so and
    # this process stages the files, as on DuckDB
    def no_executors(*args):
        raise RuntimeError("Python worker exited unexpectedly\nstack")
    monkeypatch.setattr(spark_staging, "file_candidates", no_executors)
    _, staged, quarantined = _stage_sessions_on_spark(tmp_path, _session("k1") + b"\n" + b"not json\n")
    assert staged == [("k1",)]
    assert quarantined == [(2, "malformed_record")]
    assert "spark could not stage the files of sessions, staged here instead: Python worker exited unexpectedly" in caplog.text
    assert "stack" not in caplog.text


def test_an_executor_with_another_copy_of_the_code_stages_nothing_and_the_files_are_staged_here(
        spark, tmp_path, monkeypatch, caplog):
    # the tasks compare their libraries and code with the driver's: here the driver's differ,
    # so every task refuses, and this process stages the table, saying why and by which engine
    monkeypatch.setattr(spark_staging, "environment", lambda: ("another", "copy"))
    result, staged, _ = _stage_sessions_on_spark(tmp_path, _session("k1") + b"\n")
    assert staged == [("k1",)]
    assert result.engine == "duckdb"
    assert "staged here instead: RuntimeError: this executor's libraries or code differ from the driver's" in caplog.text


def test_tasks_whose_files_do_not_hold_the_rows_they_reported_are_not_trusted(spark, tmp_path, monkeypatch, caplog):
    # the files are read here only when they hold what the tasks counted (a folder the executors
    # wrote that this process sees otherwise would lose the day's rows without an error)
    counted = spark_staging.file_candidates
    monkeypatch.setattr(spark_staging, "file_candidates", lambda *args: (counted(*args)[0], 99))
    result, staged, _ = _stage_sessions_on_spark(tmp_path, _session("k1") + b"\n")
    assert staged == [("k1",)]
    assert result.engine == "duckdb"
    assert "staged here instead: the tasks reported 99 rows and their files hold 1 here" in caplog.text


def test_a_json_lines_file_missing_from_the_archive_is_quarantined_as_on_duckdb(spark, tmp_path):
    # a file that is gone is quarantined by Spark's task as unreadable_file with DuckDB's
    # reason, and its neighbours stage
    landing = tmp_path / "landing"
    day = landing / "sessions" / DAY
    day.mkdir(parents=True)
    (day / "kept.jsonl").write_bytes(_session("k1") + b"\n")
    (day / "gone.jsonl").write_bytes(_session("g1") + b"\n")
    found = []
    for name, engine in (("duckdb", DUCKDB), ("spark", SparkEngine(master="local[2]", location=str(tmp_path / "lake")))):
        warehouse = Warehouse(path=str(tmp_path / f"{name}.duckdb"))
        with warehouse.connect() as con:
            load_table(con, LandingStore(root=str(landing)), warehouse.archive_dir, "sessions")
            next(warehouse.archive_dir.rglob("*gone.jsonl")).unlink()
            stage_table(con, "sessions", engine=engine)
            quarantined = con.execute("SELECT source_file, source_row, rule, replace(reason, $archive, '<archive>'), record "
                                      "FROM quarantine ORDER BY ALL", {"archive": str(warehouse.archive_dir)}).fetchall()
            found.append((con.execute("SELECT session_id FROM staged_sessions").fetchall(), quarantined))
    assert found[0] == found[1]
    assert found[1][0] == [("k1",)] and [r[2] for r in found[1][1]] == ["unreadable_file"]
