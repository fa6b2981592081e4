"""Tests of the unit-level A/B export importer, checked with independent DuckDB queries."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.conftest import AB_DATA, require_shared_data
from tests.importers.landing_files import read_lines
from zcl_assets.importers.ab_export import import_ab_export

TABLES = ("sessions", "assignments", "outcomes")
TIME_COLUMN = {"sessions": "started_at", "assignments": "assigned_at", "outcomes": "recorded_at"}


def glob(landing: Path, table: str) -> str:
    return str(landing / table / "*" / "*.jsonl")


@pytest.fixture(scope="module")
def ab_import(tmp_path_factory):
    require_shared_data(AB_DATA)
    landing = tmp_path_factory.mktemp("landing")
    summary = import_ab_export(
        AB_DATA,
        landing,
        experiment_id="udacity-ab",
        variant_map={"control": "old_page", "treatment": "new_page"},
    )
    return landing, summary


def test_ab_data_record_counts(ab_import):
    landing, summary = ab_import
    con = duckdb.connect()
    n_csv = con.sql(f"select count(*) from read_csv('{AB_DATA}')").fetchone()[0]
    assert n_csv == 294_478
    assert summary.rows_read == n_csv
    for table in TABLES:
        n = con.sql(
            f"select count(*) from read_json('{glob(landing, table)}', format='newline_delimited')"
        ).fetchone()[0]
        assert n == 294_478, table
        assert summary.records_written[table] == 294_478
        distinct = con.sql(
            f"select count(distinct session_id) from "
            f"read_json('{glob(landing, table)}', format='newline_delimited')"
        ).fetchone()[0]
        assert distinct == 294_478, table  # the source row number keeps ids apart
    regs = read_lines(landing, "experiments")
    assert len(regs) == 1 and summary.records_written["experiments"] == 1
    assert summary.experiment_ids == ["udacity-ab"]


def test_ab_data_daily_split_matches_csv(ab_import):
    landing, _ = ab_import
    con = duckdb.connect()
    expected = dict(
        con.sql(
            f"select strftime(cast(timestamp as timestamp), '%Y-%m-%d') as d, count(*) "
            f"from read_csv('{AB_DATA}', types={{'timestamp': 'VARCHAR'}}) group by 1"
        ).fetchall()
    )
    assert len(expected) == 23  # 2017-01-02 .. 2017-01-24
    for table in TABLES:
        got = dict(
            con.sql(
                f"select regexp_extract(filename, '(\\d{{4}}-\\d{{2}}-\\d{{2}})', 1) as d, count(*) "
                f"from read_json('{glob(landing, table)}', format='newline_delimited', "
                f"filename=true) group by 1"
            ).fetchall()
        )
        assert got == expected, table
        # every record lies in the folder of its own UTC day, written with +00:00
        bad = con.sql(
            f"select count(*) from read_json('{glob(landing, table)}', "
            f"format='newline_delimited', filename=true, columns={{"
            f"'{TIME_COLUMN[table]}': 'VARCHAR', 'session_id': 'VARCHAR'}}) "
            f"where not ends_with({TIME_COLUMN[table]}, '+00:00') "
            f"or strftime(cast({TIME_COLUMN[table]} as timestamptz) at time zone 'UTC', '%Y-%m-%d') "
            f"<> regexp_extract(filename, '(\\d{{4}}-\\d{{2}}-\\d{{2}})', 1)"
        ).fetchone()[0]
        assert bad == 0, table


def test_ab_data_mismatches_and_repeats_kept(ab_import):
    landing, summary = ab_import
    con = duckdb.connect()
    csv_mismatch = con.sql(
        f"select count(*) from read_csv('{AB_DATA}') "
        f"where (\"group\" = 'treatment') <> (landing_page = 'new_page')"
    ).fetchone()[0]
    assert csv_mismatch == 3_893
    written_mismatch = con.sql(
        f"select count(*) from read_json('{glob(landing, 'sessions')}', format='newline_delimited') s "
        f"join read_json('{glob(landing, 'assignments')}', format='newline_delimited') a "
        f"using (session_id) where s.delivered_arm <> a.arm"
    ).fetchone()[0]
    assert written_mismatch == 3_893
    assert summary.mismatched_rows == 3_893
    assert summary.unparseable_rows == 0
    # repeated units are written too (290,584 distinct users in 294,478 rows)
    users = con.sql(
        f"select count(distinct user_id) from read_json('{glob(landing, 'sessions')}', "
        f"format='newline_delimited', columns={{'user_id': 'VARCHAR'}})"
    ).fetchone()[0]
    csv_users = con.sql(f"select count(distinct user_id) from read_csv('{AB_DATA}')").fetchone()[0]
    assert users == csv_users == 290_584
    # conversions carried over exactly
    csv_conv = con.sql(f"select sum(converted) from read_csv('{AB_DATA}')").fetchone()[0]
    got_conv = con.sql(
        f"select count(*) filter (where success) from "
        f"read_json('{glob(landing, 'outcomes')}', format='newline_delimited')"
    ).fetchone()[0]
    assert got_conv == csv_conv


def test_ab_data_registration(ab_import):
    landing, summary = ab_import
    (reg,) = read_lines(landing, "experiments")
    assert reg["_day"] == "2017-01-02"
    assert reg["registered_at"] == "2017-01-02T00:00:00+00:00"
    assert summary.registered_at == reg["registered_at"]
    assert [a["name"] for a in reg["arms"]] == ["control", "treatment"]
    assert [a["allocation"] for a in reg["arms"]] == [0.5, 0.5]
    assert reg["arms"][1]["payload"] == {"delivered_value": "new_page"}
    assert reg["control_arm"] == "control"
    assert reg["primary_metric"] == "success" and reg["direction"] == "increase"
    assert (reg["mde"], reg["alpha"], reg["power"], reg["baseline_mean"]) == (0.01, 0.05, 0.8, 0.5)
    assert reg["sessions_per_unit"] == "one" and reg["randomization_unit"] == "user"
    assert reg["schema_version"] == 1


TINY = """uid,ts,arm,shown,ok,extra
u1,2026-11-02 09:14:03,A,pageA,1,x
u2,2026-11-02T23:59:59+00:00,B,pageB,0,x
u3,2026-11-03T01:00:00+02:00,B,pageA,true,x
,2026-11-03 10:00:00,A,pageA,False,x
u5,yesterday,A,pageA,1,x
u6,2026-11-03 11:00:00,B,pageC,maybe,x
u1,2026-11-04 08:00:00,A,pageA,0,x
"""


def tiny_import(tmp_path: Path, src: Path, **kw):
    opts = dict(
        experiment_id="exp-tiny",
        unit_column="uid",
        timestamp_column="ts",
        assigned_column="arm",
        delivered_column="shown",
        outcome_column="ok",
        variant_map={"A": "pageA", "B": "pageB"},
        control_arm="A",
        org_id="acme",
        task_type="checkout",
        mde=0.05,
        baseline_mean=0.3,
        evaluator_id="warehouse",
        evaluator_version="7",
        evaluator_kind="human",
        allocation={"A": 0.25, "B": 0.75},
    )
    opts.update(kw)
    return import_ab_export(src, tmp_path / "landing", **opts)


def test_tiny_options_and_unparseable_rows(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    s = tiny_import(tmp_path, src)
    landing = tmp_path / "landing"
    assert s.rows_read == 7
    assert s.records_written == {"experiments": 1, "sessions": 7, "assignments": 7, "outcomes": 7}
    # bad timestamp, missing unit, non-binary outcome
    assert s.unparseable_rows == 3
    # row 3 delivered pageA (=A) but assigned B; row 6 delivered pageC (not in map)
    assert s.mismatched_rows == 2

    sessions = {r["session_id"]: r for r in read_lines(landing, "sessions")}
    assert sorted(sessions) == [f"exp-tiny:{i}" for i in range(1, 8)]
    assert sessions["exp-tiny:1"]["started_at"] == "2026-11-02T09:14:03+00:00"  # naive = UTC
    assert sessions["exp-tiny:1"]["_day"] == "2026-11-02"
    assert sessions["exp-tiny:3"]["started_at"] == "2026-11-02T23:00:00+00:00"  # offset -> UTC
    assert sessions["exp-tiny:3"]["_day"] == "2026-11-02"
    assert sessions["exp-tiny:3"]["delivered_arm"] == "A"
    assert sessions["exp-tiny:6"]["delivered_arm"] == "pageC"  # unmapped: verbatim
    assert sessions["exp-tiny:4"]["user_id"] is None  # missing unit written as null
    assert sessions["exp-tiny:5"]["started_at"] == "yesterday"  # raw text kept
    assert sessions["exp-tiny:5"]["_day"] == "2026-11-02"  # earliest day of the import
    assert sessions["exp-tiny:7"]["user_id"] == "u1"  # repeated unit kept
    s1 = sessions["exp-tiny:1"]
    assert (s1["org_id"], s1["task_type"], s1["experiment_id"]) == ("acme", "checkout", "exp-tiny")
    assert s1["context_doc_ids"] == [] and s1["context_digest"] == ""
    assert s1["ended_at"] == s1["started_at"]

    assignments = {r["session_id"]: r for r in read_lines(landing, "assignments")}
    assert assignments["exp-tiny:3"]["arm"] == "B"
    assert assignments["exp-tiny:1"]["unit_id"] == "u1"

    outcomes = {r["session_id"]: r for r in read_lines(landing, "outcomes")}
    assert [outcomes[f"exp-tiny:{i}"]["success"] for i in range(1, 8)] == [
        True, False, True, False, True, "maybe", False
    ]
    o = outcomes["exp-tiny:1"]
    assert (o["evaluator_id"], o["evaluator_version"], o["evaluator_kind"]) == ("warehouse", "7", "human")

    (reg,) = read_lines(landing, "experiments")
    assert reg["registered_at"] == "2026-11-02T00:00:00+00:00"
    assert reg["arms"] == [
        {"name": "A", "payload": {"delivered_value": "pageA"}, "allocation": 0.25},
        {"name": "B", "payload": {"delivered_value": "pageB"}, "allocation": 0.75},
    ]
    assert (reg["org_id"], reg["task_type"], reg["control_arm"]) == ("acme", "checkout", "A")
    assert (reg["mde"], reg["baseline_mean"]) == (0.05, 0.3)
    assert "tiny.csv" in reg["hypothesis"]
    assert "extra" not in s1


def test_reimport_overwrites_and_explicit_registration(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    first = tiny_import(tmp_path, src)
    second = tiny_import(tmp_path, src, registered_at="2026-11-01T12:00:00Z", hypothesis="H1")
    assert sorted(first.files_written) != []
    files = sorted((tmp_path / "landing").rglob("*.jsonl"))
    # registration moved day: the stale registration file was removed, others overwritten
    assert len(read_lines(tmp_path / "landing", "experiments")) == 1
    assert len(read_lines(tmp_path / "landing", "sessions")) == 7
    assert sorted(second.files_written) == files
    (reg,) = read_lines(tmp_path / "landing", "experiments")
    assert reg["registered_at"] == "2026-11-01T12:00:00+00:00" and reg["_day"] == "2026-11-01"
    assert reg["hypothesis"] == "H1"


def test_parquet_source_and_no_variant_map(tmp_path):
    src = tmp_path / "export.parquet"
    pl.read_csv(TINY.encode(), infer_schema=False).with_columns(
        pl.col("ok").replace({"maybe": "1", "true": "1", "False": "0"}).cast(pl.Int64)
    ).write_parquet(src)
    s = import_ab_export(
        src, tmp_path / "landing", experiment_id="p", unit_column="uid", timestamp_column="ts",
        assigned_column="arm", delivered_column="shown", outcome_column="ok", control_arm="A",
    )
    assert s.records_written["outcomes"] == 7
    sessions = read_lines(tmp_path / "landing", "sessions")
    # without a map every delivered value is kept verbatim, so all mismatch
    assert {r["delivered_arm"] for r in sessions} == {"pageA", "pageB", "pageC"}
    assert s.mismatched_rows == 7
    assert all(isinstance(r["success"], bool) for r in read_lines(tmp_path / "landing", "outcomes"))
