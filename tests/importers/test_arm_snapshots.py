"""Tests of the aggregate (arm snapshot) importer on the bundled ASOS dataset."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from tests.importers.landing_files import read_lines
from zcl_assets.importers.arm_snapshots import import_arm_snapshots

REPO_ROOT = Path(__file__).resolve().parents[2]
BUNDLE = REPO_ROOT / "bundled" / "asos_digital_experiments"
ASOS = BUNDLE / "asos_digital_experiments_dataset.csv"
SNAP = "read_parquet('{g}', filename=true)"
SRC = f"read_csv('{ASOS}', types={{'experiment_id': 'VARCHAR'}})"


def utc_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    return con


def test_bundled_copy_is_unmodified():
    prov = json.loads((BUNDLE / "provenance.json").read_text())
    want = prov["files"]["asos_digital_experiments_dataset.csv"]["sha256"]
    assert hashlib.sha256(ASOS.read_bytes()).hexdigest() == want
    readme = (BUNDLE / "README.md").read_text()
    for needle in ("CC BY 4.0", "2111.10198", "osf.io/64jsb", want):
        assert needle in readme


@pytest.fixture(scope="module")
def asos(tmp_path_factory):
    landing = tmp_path_factory.mktemp("landing")
    return landing, import_arm_snapshots(ASOS, landing)


def test_snapshot_counts_match_source(asos):
    landing, s = asos
    con = utc_connection()
    snap = SNAP.format(g=landing / "arm_snapshots" / "*" / "*.parquet")
    n_rows = con.sql(f"select count(*) from {SRC}").fetchone()[0]
    n_control = con.sql(
        f"select count(*) from (select distinct experiment_id, metric_id, time_since_start from {SRC})"
    ).fetchone()[0]
    assert (n_rows, n_control) == (24_153, 19_097)
    got_t = con.sql(f"select count(*) from {snap} where arm <> 'control'").fetchone()[0]
    got_c = con.sql(f"select count(*) from {snap} where arm = 'control'").fetchone()[0]
    assert (got_t, got_c) == (n_rows, n_control)
    assert s.rows_read == n_rows
    assert (s.treatment_snapshots, s.control_snapshots) == (n_rows, n_control)
    assert s.records_written == {"experiments": 78, "arm_snapshots": n_rows + n_control}
    assert s.conflicting_control_keys == 0
    # the key (experiment, arm, metric, at) is unique
    dup = con.sql(
        f"select count(*) from (select experiment_id, arm, metric, \"at\" from {snap} "
        f"group by all having count(*) > 1)"
    ).fetchone()[0]
    assert dup == 0
    # each record sits in the folder of its UTC day
    misplaced = con.sql(
        f"select count(*) from {snap} where strftime(\"at\", '%Y-%m-%d') <> "
        f"regexp_extract(filename, '(\\d{{4}}-\\d{{2}}-\\d{{2}})', 1)"
    ).fetchone()[0]
    assert misplaced == 0


def test_experiments_and_variant_arms(asos):
    landing, s = asos
    con = utc_connection()
    snap = SNAP.format(g=landing / "arm_snapshots" / "*" / "*.parquet")
    assert con.sql(f"select count(distinct experiment_id) from {SRC}").fetchone()[0] == 78
    pairs = con.sql(
        f"select count(*) from (select distinct experiment_id, arm from {snap} where arm <> 'control')"
    ).fetchone()[0]
    assert pairs == 99 == s.experiment_arms
    regs = read_lines(landing, "experiments")
    assert len(regs) == 78 and len(s.experiment_ids) == 78
    assert "036afc" in s.experiment_ids  # read as text, leading zero kept
    for r in regs:
        r["arms"] = json.loads(r["arms"])
    assert sum(len(r["arms"]) - 1 for r in regs) == 99
    for r in regs:
        # the source does not say how units were split: the allocation is recorded as unknown
        assert [a["allocation"] for a in r["arms"]] == [None] * len(r["arms"])
        assert r["arms"][0]["name"] == "control" == r["control_arm"]
        assert r["registered_at"] == dt.datetime(2021, 1, 3, 23, 59, 59, tzinfo=dt.timezone.utc) and r["_day"] == "2021-01-03"
        assert r["kind"] == "other" and r["primary_metric"] == "success"
        assert r["direction"] == "increase" and r["baseline_sd"] is None
        assert r["mde"] == pytest.approx(0.01 * r["baseline_mean"])
        assert "ASOS" in r["hypothesis"]
    first = {r["experiment_id"]: r for r in regs}["036afc"]
    assert first["baseline_mean"] == 0.10780847047563343  # control mean of metric 1 at t=1.5 d
    # no calendar dates: each experiment is its own family of alpha slots
    assert first["org_id"] == "asos" and first["task_type"] == "online_retail/036afc"


def test_values_times_and_nulls_preserved(asos):
    landing, _ = asos
    con = utc_connection()
    snap = SNAP.format(g=landing / "arm_snapshots" / "*" / "*.parquet")
    t_nulls = con.sql(f"select count(*) from {SRC} where variance_t is null").fetchone()[0]
    c_nulls = con.sql(
        f"select count(*) from (select distinct experiment_id, metric_id, time_since_start, "
        f"count_c, mean_c, variance_c from {SRC}) where variance_c is null"
    ).fetchone()[0]
    assert t_nulls == 779
    assert con.sql(f"select count(*) from {snap} where arm <> 'control' and variance is null").fetchone()[0] == t_nulls
    assert con.sql(f"select count(*) from {snap} where arm = 'control' and variance is null").fetchone()[0] == c_nulls
    row = con.sql(
        f"select n, mean, variance, \"at\" from {snap} where experiment_id = '036afc' "
        f"and arm = 'variant_2' and metric = 'success' order by \"at\" limit 1"
    ).fetchone()
    assert row == (186_686, 0.10782811780208479, 0.09620121481334451, dt.datetime(2021, 1, 5, 12, tzinfo=dt.timezone.utc))
    # exact value round trip of every treatment snapshot: join back to the source
    mismatched = con.sql(
        f"select count(*) from {SRC} src left join {snap} s on s.experiment_id = src.experiment_id "
        f"and s.arm = 'variant_' || src.variant_id and s.metric = case when src.metric_id = 1 "
        f"then 'success' else 'metric_' || src.metric_id end "
        f"and s.\"at\" = cast(timestamp '2021-01-04' + to_microseconds(cast(round(src.time_since_start * 86400e6) as bigint)) as timestamptz) "
        f"where s.n is distinct from cast(src.count_t as bigint) or s.mean is distinct from src.mean_t "
        f"or s.variance is distinct from src.variance_t"
    ).fetchone()[0]
    assert mismatched == 0


def test_conflicting_controls_written_and_counted(tmp_path):
    src = tmp_path / "mini.csv"
    src.write_text(
        "experiment_id,variant_id,metric_id,time_since_start,count_c,count_t,mean_c,mean_t,variance_c,variance_t\n"
        "00a1,1,1,1.0,100,90,0.5,0.6,0.25,0.24\n"
        "00a1,2,1,1.0,100,95,0.5,0.4,0.25,0.24\n"   # same control snapshot: written once
        "00a1,3,1,1.0,101,95,0.5,0.4,0.25,0.24\n"   # disagreeing control: both written
        "00a1,1,2,0.5,1,1,3.0,4.0,,\n"
    )
    s = import_arm_snapshots(src, tmp_path / "landing", start_date="2026-01-01", org_id="o",
                             task_type="t", mde_relative=0.1, min_samples_per_arm=5)
    assert s.conflicting_control_keys == 1
    assert (s.treatment_snapshots, s.control_snapshots) == (4, 3)
    snaps = read_lines(tmp_path / "landing", "arm_snapshots")
    assert len(snaps) == 7
    ctrl = [r for r in snaps if r["arm"] == "control" and r["metric"] == "success"]
    assert sorted(r["n"] for r in ctrl) == [100, 101]
    late = [r for r in snaps if r["metric"] == "metric_2"]
    assert {r["at"] for r in late} == {dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone.utc)}
    assert all(r["variance"] is None for r in late)
    (reg,) = read_lines(tmp_path / "landing", "experiments")
    assert [a["name"] for a in json.loads(reg["arms"])] == ["control", "variant_1", "variant_2", "variant_3"]
    assert reg["mde"] == pytest.approx(0.05) and reg["baseline_mean"] == 0.5
    assert reg["registered_at"] == dt.datetime(2025, 12, 31, 23, 59, 59, tzinfo=dt.timezone.utc)
    assert reg["min_samples_per_arm"] == 5 and reg["org_id"] == "o"


def test_generic_layout_pass_through(tmp_path):
    src = tmp_path / "generic.csv"
    src.write_text(
        "experiment_id,arm,metric,at,n,mean,variance,ignored\n"
        "e1,control,success,2026-05-01 23:00:00,10,0.5,0.27,x\n"
        "e1,b,success,2026-05-02T01:00:00+02:00,12,0.6,0.25,x\n"
        "e1,b,success,2026-05-02T12:00:00+00:00,1,0.6,,x\n"
        "007,b,success,not a time,3,0.6,0.3,x\n"
    )
    s = import_arm_snapshots(src, tmp_path / "landing", layout="generic")
    assert s.records_written == {"arm_snapshots": 4}
    assert s.experiment_ids == ["007", "e1"]
    recs = read_lines(tmp_path / "landing", "arm_snapshots")
    by_day: dict[str, int] = {}
    for r in recs:
        by_day[r["_day"]] = by_day.get(r["_day"], 0) + 1
    assert by_day == {"2026-05-01": 3, "2026-05-02": 1}  # unparseable 'at' -> earliest day
    assert [r["at"] for r in recs if r["_day"] == "2026-05-01"] == [
        "2026-05-01T23:00:00+00:00", "2026-05-01T23:00:00+00:00", "not a time"
    ]
    assert recs[-1]["variance"] is None and "ignored" not in recs[0]
    assert not (tmp_path / "landing" / "experiments").exists()
