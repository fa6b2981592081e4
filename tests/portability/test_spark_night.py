"""A night of the synthetic world on Spark (local mode) gives the warehouse the DuckDB night gives.

The same landing is run twice through ``nightly_job``, each on its own ephemeral Dagster instance
and warehouse: once with the embedded default (``ZCL_ENGINE`` unset) and once with
``ZCL_ENGINE=spark`` (``local[2]``), where staging's candidate rows (every landed row read and
validated by the contracts) are computed by Spark's tasks (``zcl_assets.portability.spark_staging``)
and the verification records, the experience, its
quarantine rows and the look's per-day sums are computed by Spark SQL translated from the same
files (``zcl_assets.engine``). Every table of the two warehouses is then compared row for row,
as the incremental-equals-fresh test compares two loads (the same table list and the same
bookkeeping columns left out): integers and text exactly, floats bit for bit
(``tests.warehouse_checks.bits``), since every double on the path is either passed through or
a function of exact integer sums. (The Experience Gain, floating-point ``avg``/``var_samp`` in
DuckDB whose last bits follow the physical order of the experience rows, ``EXPERIENCE_GAIN_ORDER``,
could differ in its last bits; the synthetic world has no memory runs, so its tables are empty
on both engines and compared like the others.)

The incremental sequence of ``tests/end_to_end/landing_history.py`` (held rows released, corrected
and removed files, outcomes waiting for their sessions) is run night by night on both engines
too, on the nine nights of its reduced run (each event of the history seen before and after it
happens; a Spark night of this small world costs about 25 s on two cores), and every table
compared the same way after the last; ``ZCL_EVERY_NIGHT=1`` runs all 30 nights on both engines
(the figures in ``docs/cluster.md``).

One Spark session serves the whole module (Spark's start-up is most of its cost).
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest

from tests.end_to_end import landing_history as lh
from tests.end_to_end.synthetic_world import AS_OF, build_world
from tests.end_to_end.test_bad_input import EXPECTED_RULES, write_bad_landing
from tests.end_to_end.test_incremental_equals_fresh import COMPARED, NOT_COMPARED
from tests.warehouse_checks import conservation_gaps, exact_rows, row_differences, run_one_night, warehouse_tables


@pytest.fixture(scope="module")
def nights(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("spark_night")
    landing = root / "landing"
    build_world().write(landing)
    duck, on_spark = root / "duckdb" / "warehouse.duckdb", root / "spark" / "warehouse.duckdb"
    run_one_night(landing, duck, AS_OF)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZCL_ENGINE", "spark")
        mp.setenv("ZCL_SPARK_MASTER", "local[2]")
        mp.setenv("ZCL_SPARK_WAREHOUSE", str(root / "spark" / "lake"))
        results = run_one_night(landing, on_spark, AS_OF)
    return duck, on_spark, root / "spark" / "lake", results


@pytest.fixture(scope="module")
def sequences(spark, tmp_path_factory):
    history = lh.build_history()
    root = tmp_path_factory.mktemp("spark_nights")
    out = []
    for engine in ("duckdb", "spark"):
        landing, warehouse = root / engine / "landing", root / engine / "warehouse.duckdb"
        with pytest.MonkeyPatch.context() as mp, dg.DagsterInstance.ephemeral() as instance:
            if engine == "spark":
                mp.setenv("ZCL_ENGINE", "spark")
                mp.setenv("ZCL_SPARK_WAREHOUSE", str(root / engine / "lake"))
            for night in history.nights:
                lh.sync_landing(landing, history.landing_on(night))
                run_one_night(landing, warehouse, lh.day(night), instance=instance)
        out.append(warehouse)
    return out


def _differing(left: Path, right: Path) -> dict[str, str]:
    with duckdb.connect(str(left), read_only=True) as con:
        tables = sorted(warehouse_tables(con) - set(NOT_COMPARED))
    return {t: d for t in tables if (d := row_differences(_rows(left, t), _rows(right, t)))}


def _rows(warehouse: Path, table: str):
    spec = COMPARED.get(table, {})
    with duckdb.connect(str(warehouse), read_only=True) as con:
        params = {"folder": str(warehouse.parent)} if "columns" in spec else None
        return exact_rows(con, table, spec.get("drop", ()), spec.get("where", ""), spec.get("columns"), params)


def test_both_engines_write_the_same_tables(nights):
    duck, on_spark, *_ = nights
    found = []
    for path in (duck, on_spark):
        with duckdb.connect(str(path), read_only=True) as con:
            found.append(warehouse_tables(con))
    assert found[0] == found[1]


def test_every_table_is_the_same_on_both_engines(nights):
    duck, on_spark, *_ = nights
    assert _differing(duck, on_spark) == {}
    with duckdb.connect(str(on_spark), read_only=True) as con:
        assert {"main.staged_assignments", "main.experience", "main.arm_day_sums", "main.experiment_analysis",
                "main.quarantine"} <= warehouse_tables(con)
        # the world's bad rows were quarantined with their rules (those of the experience stage,
        # which Spark computes: test_bad_input_is_quarantined_with_its_rule_on_spark)
        rules = con.execute("SELECT count(DISTINCT rule) FROM quarantine WHERE stage = 'contract'").fetchone()[0]
    assert rules >= 1


def test_the_incremental_nights_give_the_same_tables_on_both_engines(sequences):
    duck, on_spark = sequences
    assert _differing(duck, on_spark) == {}
    with duckdb.connect(str(on_spark), read_only=True) as con:
        superseded = con.execute("SELECT count(*) FROM landing_manifest WHERE superseded_at IS NOT NULL").fetchone()[0]
    assert superseded > 0  # the corrections landed


def test_the_night_was_computed_on_spark(nights, spark):
    # The Spark warehouse holds the staged tables and the experience Spark read, as Parquet, and
    # the sums Spark wrote; Spark reading them back gives the warehouse's rows.
    duck, on_spark, lake, results = nights
    # staging: the candidate rows of the landed files were computed by Spark's tasks, one per raw row
    engines = {m.asset_key.path[-1]: m.metadata["engine"].value for r in results
               for m in r.asset_materializations_for_node("landing_and_staging") if "engine" in m.metadata}
    assert engines and {engines[f"staged_{t}"] for t in ("experiments", "assignments", "sessions", "outcomes")} == {"spark"}
    with duckdb.connect(str(on_spark), read_only=True) as con:
        landed = dict(con.execute(
            "SELECT table_name, sum(row_count) FROM landing_manifest WHERE superseded_at IS NULL GROUP BY ALL").fetchall())
    assert landed and all(spark.read.parquet(str(lake / "_candidates" / t)).count() == n for t, n in landed.items())
    # the tables Spark read, mirrored a file a day: Spark reading the files gives the warehouse's rows
    for table in ("staged_assignments", "staged_sessions", "verification_records", "experience"):
        files = sorted(str(p) for p in (lake / table).glob("*.parquet"))
        with duckdb.connect(str(on_spark), read_only=True) as con:
            rows = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        assert len(files) > 2 and spark.read.parquet(*files).count() == rows > 0, table
    for table in ("verification_records", "experience", "arm_day_sums", "look_violation_days", "quarantine"):
        assert list((lake / "_results" / table).glob("*.parquet")), table
    with duckdb.connect(str(on_spark), read_only=True) as con:
        experience = con.execute("SELECT count(*) FROM experience").fetchone()[0]
    assert experience > 100
    assert spark.read.parquet(str(lake / "_results" / "experience")).count() == experience


def test_bad_input_is_quarantined_with_its_rule_on_spark(spark, tmp_path, monkeypatch):
    # The landing of tests/end_to_end/test_bad_input.py (every kind of bad row and file) gives
    # the quarantine counted there by hand, on Spark as on DuckDB; each row's rule and reason
    # equal the DuckDB night's.
    reasons = []
    for engine in ("duckdb", "spark"):
        landing, warehouse = tmp_path / engine / "landing", tmp_path / engine / "warehouse.duckdb"
        write_bad_landing(landing)
        monkeypatch.setenv("ZCL_ENGINE", engine)
        monkeypatch.setenv("ZCL_SPARK_WAREHOUSE", str(tmp_path / engine / "lake"))
        run_one_night(landing, warehouse, "2026-10-03")
        with duckdb.connect(str(warehouse), read_only=True) as con:
            rules = {(t, r): n for t, r, n in con.execute(
                "SELECT source_table, rule, count(*) FROM quarantine GROUP BY ALL").fetchall()}
            assert conservation_gaps(con, ("experiments", "assignments", "sessions", "arm_snapshots", "outcomes")) == {}
            reasons.append(sorted(con.execute(
                "SELECT source_table, stage, rule, reason, record, partition_day, source_file, source_row FROM quarantine"
            ).fetchall(), key=repr))
        assert rules == EXPECTED_RULES, engine
    assert reasons[0] == reasons[1]


def test_zcl_run_with_engine_spark_runs_the_night_on_spark(spark, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from zcl_assets.cli import main

    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    build_world().write(landing)
    for variable, value in (("DAGSTER_HOME", tmp_path / "dagster_home"), ("ZCL_LANDING_DIR", landing),
                            ("ZCL_WAREHOUSE", warehouse), ("ZCL_ENGINE", "duckdb")):
        monkeypatch.setenv(variable, str(value))  # restored afterwards: the command sets ZCL_ENGINE
    monkeypatch.delenv("ZCL_SPARK_WAREHOUSE", raising=False)
    result = CliRunner().invoke(main, ["run", "--as-of", AS_OF, "--engine", "spark", "--master", "local[2]"])
    assert result.exit_code == 0, result.output
    lake = tmp_path / "warehouse_spark"  # the default: beside the DuckDB file
    assert (lake / "experience" / "_mirror.json").is_file()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        sums = con.execute("SELECT count(*) FROM arm_day_sums").fetchone()[0]
    # a first night builds every day of the sums in one statement on Spark
    assert sums > 0 and spark.read.parquet(str(lake / "_results" / "arm_day_sums")).count() == sums
