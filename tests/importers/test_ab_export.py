"""Tests of the unit-level A/B export importer, checked with independent DuckDB queries."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.conftest import AB_DATA, require_shared_data
from tests.importers.landing_files import read_lines
from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export

TABLES = ("sessions", "assignments", "outcomes")
TIME_COLUMN = {"sessions": "started_at", "assignments": "assigned_at", "outcomes": "recorded_at"}


def glob(landing: Path, table: str) -> str:
    return str(landing / table / "*" / "*.parquet")


@pytest.fixture(scope="module")
def ab_import(tmp_path_factory):
    require_shared_data(AB_DATA)
    landing = tmp_path_factory.mktemp("landing")
    summary = import_ab_export(
        AB_DATA, landing, AbExportOptions(experiment_id="udacity-ab", variant_map={"control": "old_page", "treatment": "new_page"})
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
            f"select count(*) from read_parquet('{glob(landing, table)}')"
        ).fetchone()[0]
        assert n == 294_478, table
        assert summary.records_written[table] == 294_478
        distinct = con.sql(
            f"select count(distinct session_id) from "
            f"read_parquet('{glob(landing, table)}')"
        ).fetchone()[0]
        # ids come from (unit, timestamp, digest of the row's values): every row of ab_data differs
        assert distinct == 294_478, table
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
                f"from read_parquet('{glob(landing, table)}', filename=true) group by 1"
            ).fetchall()
        )
        assert got == expected, table
        # every record lies in the folder of its own UTC day, stored as a UTC timestamp
        bad = con.sql(
            f"select count(*) from read_parquet('{glob(landing, table)}', filename=true) "
            f"where strftime({TIME_COLUMN[table]} at time zone 'UTC', '%Y-%m-%d') "
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
        f"select count(*) from read_parquet('{glob(landing, 'sessions')}') s "
        f"join read_parquet('{glob(landing, 'assignments')}') a "
        f"using (session_id) where s.delivered_arm <> a.arm"
    ).fetchone()[0]
    assert written_mismatch == 3_893
    assert summary.mismatched_rows == 3_893
    assert summary.unparseable_rows == 0
    # repeated units are written too (290,584 distinct users in 294,478 rows)
    users = con.sql(
        f"select count(distinct user_id) from read_parquet('{glob(landing, 'sessions')}')"
    ).fetchone()[0]
    csv_users = con.sql(f"select count(distinct user_id) from read_csv('{AB_DATA}')").fetchone()[0]
    assert users == csv_users == 290_584
    # conversions carried over exactly
    csv_conv = con.sql(f"select sum(converted) from read_csv('{AB_DATA}')").fetchone()[0]
    got_conv = con.sql(
        f"select count(*) filter (where success) from "
        f"read_parquet('{glob(landing, 'outcomes')}')"
    ).fetchone()[0]
    assert got_conv == csv_conv


def test_ab_data_registration(ab_import):
    landing, summary = ab_import
    (reg,) = read_lines(landing, "experiments")
    arms = json.loads(reg["arms"])
    assert reg["_day"] == "2017-01-02"
    assert reg["registered_at"] == dt.datetime(2017, 1, 2, tzinfo=dt.timezone.utc)
    assert summary.registered_at == "2017-01-02T00:00:00+00:00"
    assert [a["name"] for a in arms] == ["control", "treatment"]
    assert [a["allocation"] for a in arms] == [0.5, 0.5]
    assert arms[1]["payload"] == {"delivered_value": "new_page"}
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
TINY_OPTIONS = dict(
    experiment_id="exp-tiny", unit_column="uid", timestamp_column="ts", assigned_column="arm", delivered_column="shown",
    outcome_column="ok", variant_map={"A": "pageA", "B": "pageB"}, control_arm="A", org_id="acme", task_type="checkout",
    mde=0.05, baseline_mean=0.3, evaluator_id="warehouse", evaluator_version="7", evaluator_kind="human",
    allocation={"A": 0.25, "B": 0.75},
)


def tiny_import(tmp_path: Path, src: Path, **kw):
    return import_ab_export(src, tmp_path / "landing", AbExportOptions(**{**TINY_OPTIONS, **kw}))


def expected_id(unit, ts, arm, shown, ok, experiment="exp-tiny"):
    """The documented id: experiment, unit, timestamp text and 48 bits of the MD5 of the row's values (hashlib)."""
    values = [v if v is not None else "\0" for v in (unit, ts, arm, shown, ok)]
    digest = int(hashlib.md5("\x1f".join(values).encode()).hexdigest()[:12], 16)
    return f"{experiment}:{unit or ''}:{ts}:{digest:015d}"


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
    assert s.undeclared_labels == {}
    assert all(p.suffix == ".parquet" and p.name == "ab_export-exp-tiny.parquet" for p in s.files_written)

    ids = [expected_id(*row) for row in (
        ("u1", "2026-11-02 09:14:03", "A", "pageA", "1"), ("u2", "2026-11-02T23:59:59+00:00", "B", "pageB", "0"),
        ("u3", "2026-11-03T01:00:00+02:00", "B", "pageA", "true"), (None, "2026-11-03 10:00:00", "A", "pageA", "False"),
        ("u5", "yesterday", "A", "pageA", "1"), ("u6", "2026-11-03 11:00:00", "B", "pageC", "maybe"),
        ("u1", "2026-11-04 08:00:00", "A", "pageA", "0"),
    )]
    sessions = {r["session_id"]: r for r in read_lines(landing, "sessions")}
    assert sorted(sessions) == sorted(ids)
    # The timestamp column holds one unparseable value, so it is written as text for the contract to judge.
    assert sessions[ids[0]]["started_at"] == "2026-11-02T09:14:03+00:00"  # naive = UTC
    assert sessions[ids[0]]["_day"] == "2026-11-02"
    assert sessions[ids[2]]["started_at"] == "2026-11-02T23:00:00+00:00"  # offset -> UTC
    assert sessions[ids[2]]["_day"] == "2026-11-02"
    assert sessions[ids[2]]["delivered_arm"] == "A"
    assert sessions[ids[5]]["delivered_arm"] == "pageC"  # unmapped: verbatim
    assert sessions[ids[3]]["user_id"] is None  # missing unit written as null
    assert sessions[ids[4]]["started_at"] == "yesterday"  # raw text kept
    assert sessions[ids[4]]["_day"] == "2026-11-02"  # earliest day of the import
    assert sessions[ids[6]]["user_id"] == "u1"  # repeated unit kept
    s1 = sessions[ids[0]]
    assert (s1["org_id"], s1["task_type"], s1["experiment_id"]) == ("acme", "checkout", "exp-tiny")
    assert "extra" not in s1

    assignments = {r["session_id"]: r for r in read_lines(landing, "assignments")}
    assert assignments[ids[2]]["arm"] == "B"
    assert assignments[ids[0]]["unit_id"] == "u1"

    outcomes = {r["session_id"]: r for r in read_lines(landing, "outcomes")}
    # one outcome is not binary, so the column keeps text: parsed values as true/false, the rest raw
    assert [outcomes[i]["success"] for i in ids] == ["true", "false", "true", "false", "true", "maybe", "false"]
    o = outcomes[ids[0]]
    assert (o["evaluator_id"], o["evaluator_version"], o["evaluator_kind"]) == ("warehouse", "7", "human")

    (reg,) = read_lines(landing, "experiments")
    assert reg["registered_at"] == dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc)
    assert json.loads(reg["arms"]) == [
        {"name": "A", "payload": {"delivered_value": "pageA"}, "allocation": 0.25},
        {"name": "B", "payload": {"delivered_value": "pageB"}, "allocation": 0.75},
    ]
    assert (reg["org_id"], reg["task_type"], reg["control_arm"]) == ("acme", "checkout", "A")
    assert (reg["mde"], reg["baseline_mean"]) == (0.05, 0.3)
    assert "tiny.csv" in reg["hypothesis"]


def test_clean_columns_are_written_typed(tmp_path):
    src = tmp_path / "clean.csv"
    src.write_text("uid,ts,arm,shown,ok,extra\n" + "".join(line + "\n" for line in TINY.splitlines()[1:4]))
    tiny_import(tmp_path, src)
    sessions = pl.read_parquet(tmp_path / "landing" / "sessions" / "2026-11-02" / "ab_export-exp-tiny.parquet")
    assert sessions.schema["started_at"] == pl.Datetime("us", "UTC")
    outcomes = pl.concat([pl.read_parquet(p) for p in sorted((tmp_path / "landing" / "outcomes").glob("*/*.parquet"))])
    assert outcomes.schema["success"] == pl.Boolean
    assert outcomes.get_column("success").to_list() == [True, False, True]


def test_reimport_replaces_and_explicit_registration(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    first = tiny_import(tmp_path, src)
    assert first.files_written
    second = tiny_import(tmp_path, src, registered_at="2026-11-01T12:00:00Z", hypothesis="H1")
    # registration moved day: the stale registration file was removed, others overwritten
    assert [p.parent.name for p in second.files_removed] == ["2026-11-02"]
    assert len(read_lines(tmp_path / "landing", "experiments")) == 1
    assert len(read_lines(tmp_path / "landing", "sessions")) == 7
    assert sorted(second.files_written) == sorted((tmp_path / "landing").rglob("*.parquet"))
    (reg,) = read_lines(tmp_path / "landing", "experiments")
    assert reg["registered_at"] == dt.datetime(2026, 11, 1, 12, tzinfo=dt.timezone.utc) and reg["_day"] == "2026-11-01"
    assert reg["hypothesis"] == "H1"


def test_identical_reimport_leaves_files_untouched(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    tiny_import(tmp_path, src)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "landing").rglob("*.parquet")}
    tiny_import(tmp_path, src)
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "landing").rglob("*.parquet")} == before


def test_corrected_export_keeps_the_ids_of_unchanged_rows(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    tiny_import(tmp_path, src)
    first = {r["session_id"] for r in read_lines(tmp_path / "landing", "sessions")}
    lines = TINY.splitlines()
    # Row 4 removed, rows reordered, row 7's outcome corrected from 0 to 1 (every mapped variant still occurs).
    corrected = [lines[0], lines[7].replace(",0,x", ",1,x"), *reversed([lines[2], lines[3], lines[5], lines[6]]), lines[1]]
    src.write_text("\n".join(corrected) + "\n")
    tiny_import(tmp_path, src)
    second = {r["session_id"] for r in read_lines(tmp_path / "landing", "sessions")}
    assert len(first - second) == 2  # the removed row and the corrected row's old id
    assert len(second - first) == 1  # the corrected row's new id
    assert expected_id("u1", "2026-11-04 08:00:00", "A", "pageA", "1") in second


def test_arms_must_be_declared(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    with pytest.raises(ValueError, match=r"declare the arms .*'A' \(4 rows\), 'B' \(3 rows\)"):
        tiny_import(tmp_path, src, variant_map={}, allocation=None)
    # Delivered values that are not arm names need a map.
    with pytest.raises(ValueError, match="map them with --variant"):
        tiny_import(tmp_path, src, variant_map={}, arms=("A", "B"), allocation=None)
    # Delivery equal to assignment needs no map.
    s = tiny_import(tmp_path, src, variant_map={}, arms=("A", "B"), allocation=None, delivered_column=None)
    assert s.mismatched_rows == 0 and s.arms == ["A", "B"]


def test_undeclared_labels_are_written_and_listed_not_folded(tmp_path):
    src = tmp_path / "typos.csv"
    src.write_text(TINY + "u8,2026-11-03 12:00:00,a,pageA,1,x\nu9,2026-11-03 12:00:01, B,pageB,0,x\nu10,2026-11-03 12:00:02,A ,pageA,0,x\n")
    s = tiny_import(tmp_path, src)
    assert s.undeclared_labels == {"a": 1, " B": 1, "A ": 1}
    assert s.arms == ["A", "B"]  # no arm registered for a typo
    arms = sorted(r["arm"] for r in read_lines(tmp_path / "landing", "assignments"))
    assert arms.count("a") == 1 and arms.count(" B") == 1 and arms.count("A ") == 1


def test_registration_the_contract_refuses_is_not_landed(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    with pytest.raises(ValueError, match="unknown_control_arm"):
        tiny_import(tmp_path, src, control_arm="control")
    with pytest.raises(ValueError, match=r"out_of_range: alpha=2.0 must be <= 0.5"):
        tiny_import(tmp_path, src, alpha=2.0)
    assert not (tmp_path / "landing").exists()


def test_parquet_source(tmp_path):
    src = tmp_path / "export.parquet"
    pl.read_csv(TINY.encode(), infer_schema=False).with_columns(
        pl.col("ok").replace({"maybe": "1", "true": "1", "False": "0"}).cast(pl.Int64)
    ).write_parquet(src)
    s = tiny_import(tmp_path, src)
    assert s.records_written["outcomes"] == 7
    assert all(isinstance(r["success"], bool) for r in read_lines(tmp_path / "landing", "outcomes"))


def test_an_id_that_a_file_name_spells_like_another_experiments_is_refused_not_replacing_it(tmp_path):
    src = tmp_path / "clean.csv"
    src.write_text("uid,ts,arm,shown,ok,extra\n" + "".join(line + "\n" for line in TINY.splitlines()[1:4]))
    tiny_import(tmp_path, src, experiment_id="exp/tiny")  # lands as ab_export-exp_tiny.parquet
    landed = sorted(p.read_bytes() for p in (tmp_path / "landing").rglob("*.parquet"))
    with pytest.raises(ValueError, match="holds experiment 'exp/tiny'.*choose an experiment id"):
        tiny_import(tmp_path, src, experiment_id="exp_tiny")
    assert sorted(p.read_bytes() for p in (tmp_path / "landing").rglob("*.parquet")) == landed  # nothing replaced
    tiny_import(tmp_path, src, experiment_id="exp/tiny")  # the same experiment again replaces its own files


def test_a_variant_value_the_delivered_column_never_holds_is_refused_with_the_values_present(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    with pytest.raises(ValueError) as refused:
        tiny_import(tmp_path, src, variant_map={"A": "pageA", "B": "page-B"})  # a typo of pageB
    assert str(refused.value) == (
        "--variant B=page-B: the delivered column 'shown' never holds 'page-B'; "
        "it holds 'pageA' (5 rows), 'pageB' (1 row), 'pageC' (1 row)")
    assert not (tmp_path / "landing").exists()  # nothing landed


def test_a_mapping_that_would_exclude_most_rows_is_refused(tmp_path):
    src = tmp_path / "tiny.csv"
    src.write_text(TINY)
    # arms swapped: A's four rows delivered pageA (= B now), and of B's three only u3 (pageA) matches: 6 of 7 differ
    with pytest.raises(ValueError) as refused:
        tiny_import(tmp_path, src, variant_map={"A": "pageB", "B": "pageA"})
    said = str(refused.value)
    assert said.startswith("the delivered variant differs from the assignment in 85.7% of the rows (6 of 7)")
    assert "(--variant A=pageB, B=pageA)" in said and "the assigned column 'arm' holds 'A' (4 rows), 'B' (3 rows)" in said
    assert not (tmp_path / "landing").exists()


def test_the_udacity_typo_is_refused_at_import(tmp_path):
    require_shared_data(AB_DATA)
    with pytest.raises(ValueError, match=r"--variant treatment=new-page: the delivered column 'landing_page' never "
                                         r"holds 'new-page'; it holds '(new|old)_page' \(147,\d{3} rows\), '(old|new)_page'"):
        import_ab_export(AB_DATA, tmp_path / "landing", AbExportOptions(
            experiment_id="udacity-ab", variant_map={"control": "old_page", "treatment": "new-page"}))
