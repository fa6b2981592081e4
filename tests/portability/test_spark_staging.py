"""Staging with the landed JSON Lines read by Spark (local mode) gives the tables DuckDB gives.

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
from zcl_assets.portability.spark_engine import SparkEngine

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


def test_spark_read_the_json_lines_and_left_the_file_that_is_not_utf8(staged, spark):
    _, _, lake = staged
    rows = spark.read.parquet(str(lake / "_landed" / "sessions"))
    numbered = {(r["__source_file"], r["__source_row"]) for r in rows.collect()}
    assert {("crlf.jsonl", 1), ("crlf.jsonl", 3), ("crlf.jsonl", 4), ("bom.jsonl", 1), ("bom.jsonl", 4),
            ("glob[1].jsonl", 2), ("blank_lines.jsonl", 3), ("copy.jsonl", 5)} <= numbered
    assert ("latin1.jsonl", 0) in numbered  # the marker of a file read by the Python reader
    assert ("latin1.jsonl", 1) not in numbered
    assert rows.where("__source_file = 'bom.jsonl' AND __source_row = 2").count() == 0  # white space only
    for table in ("assignments", "experiments", "arm_snapshots", "outcomes"):
        assert list((lake / "_landed" / table).glob("*.parquet")), table


def test_a_json_lines_file_missing_from_the_archive_is_quarantined_as_on_duckdb(spark, tmp_path):
    # Spark cannot read a file that is gone: the table's JSON Lines are then read here, so the
    # file is quarantined as unreadable_file with DuckDB's reason and its neighbours stage.
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
