"""The look's SQL aggregates give the same rows on Spark (local mode) as on DuckDB."""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.end_to_end.synthetic_world import AS_OF, build_world
from tests.warehouse_checks import run_one_night
from zcl_assets.analysis.look_state import AGGREGATES as BUILDS
from zcl_assets.analysis.look_state import READS
from zcl_assets.portability import spark as portability
from zcl_assets.portability.spark import _compare, run_on_duckdb, run_on_spark, spark_sql

AGGREGATES = (*BUILDS, *READS)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic_spark")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    build_world().write(landing)
    run_one_night(landing, warehouse, AS_OF)
    con = duckdb.connect(str(warehouse), read_only=True)
    yield con
    con.close()


def test_every_aggregate_of_the_look_is_the_same_on_spark(synthetic, spark, tmp_path):
    # The synthetic world has three arms, a user-randomized experiment, revised outcomes, NaN
    # and nulls: every path of aggregate_arm_day_sums is taken.
    results = run_on_spark(spark, run_on_duckdb(synthetic, AS_OF, tmp_path))
    assert [r.name for r in results] == list(AGGREGATES)
    by_name = {r.name: r for r in results}
    assert by_name["aggregate_arm_day_sums"].duckdb_rows > 50
    assert by_name["select_arm_statistics"].duckdb_rows > 100
    assert by_name["select_assigned_units"].duckdb_rows > 10
    assert [(r.name, r.differing_rows) for r in results if not r.same] == []


def test_a_difference_between_the_engines_is_reported(synthetic, spark, tmp_path, monkeypatch):
    # Spark is given a look end ten days earlier, midway through the world's days, and builds
    # the daily sums from ten days later: fewer units enter, and the comparison must say so.
    def earlier(text, params=None):
        return spark_sql(text, {**params, "as_of_end": params["as_of_end"] - dt.timedelta(days=10),
                                "from_at": params["as_of_end"] - dt.timedelta(days=10)})

    monkeypatch.setattr(portability, "spark_sql", earlier)
    results = {r.name: r for r in run_on_spark(spark, run_on_duckdb(synthetic, AS_OF, tmp_path))}
    assert not results["select_arm_statistics"].same
    assert not results["select_assigned_units"].same
    assert not results["aggregate_arm_day_sums"].same


def test_spark_sql_writes_the_parameters_in_and_in_utc():
    moment = dt.datetime(2026, 3, 2, 1, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert spark_sql("SELECT 1 FROM t WHERE at < $end", {"end": moment}) == \
        "SELECT 1 FROM t WHERE at < CAST('2026-03-01 23:30:00.000000' AS TIMESTAMP)"
    with pytest.raises(KeyError):
        spark_sql("SELECT $missing")


rows = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-5, 5),
                          st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False), st.just(float("nan")))),
                min_size=1, max_size=20)


def _frame(data):
    """Rows keyed by (arm, n), n their position: the key alone orders them, whatever the means."""
    return pl.DataFrame([(arm, i, mean) for i, (arm, _, mean) in enumerate(data)],
                        schema={"arm": pl.String, "n": pl.Int64, "mean": pl.Float64}, orient="row")


@settings(max_examples=60)
@given(data=rows, seed=st.integers(0, 2**16))
def test_the_same_rows_in_another_order_are_the_same(data, seed):
    frame = _frame(data)
    result = _compare("x", frame, frame.sample(fraction=1.0, shuffle=True, seed=seed))
    assert result.same and result.max_relative_difference == 0.0


@settings(max_examples=60)
@given(data=rows, at=st.integers(0, 19))
def test_one_value_off_is_one_differing_row(data, at):
    frame = _frame(data)
    i = at % frame.height
    old = frame["mean"][i]
    new = 1.0 if old is None or old != old else (old * (1 + 1e-9) if old != 0 else 1e-300)
    changed = frame.with_columns(pl.when(pl.int_range(pl.len()) == i).then(new).otherwise(pl.col("mean")).alias("mean"))
    result = _compare("x", frame, changed)
    assert not result.same and result.differing_rows == 1


def test_columns_in_another_order_are_not_the_same():
    frame = _frame([("a", 1, 0.5)])
    assert not _compare("x", frame, frame.select("n", "arm", "mean")).same


def test_zcl_check_spark_prints_the_comparison_and_exits_0_when_every_aggregate_agrees(synthetic, spark):
    # Last in this file: the command stops the Spark session it used, which is the module's.
    from click.testing import CliRunner

    from zcl_assets.cli import main

    warehouse = synthetic.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    result = CliRunner().invoke(main, ["--warehouse", warehouse, "check-spark", "--as-of", AS_OF], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = [line.split() for line in result.output.splitlines() if line.split() and line.split()[0] in AGGREGATES]
    assert [line[0] for line in lines] == list(AGGREGATES)
    assert all(line[5] == "same" and line[1] == line[2] and line[3] == "0" for line in lines)


def test_zcl_check_spark_says_what_is_missing_without_a_traceback(synthetic, tmp_path):
    from click.testing import CliRunner

    from zcl_assets.cli import main

    result = CliRunner().invoke(main, ["--warehouse", str(tmp_path / "none.duckdb"), "check-spark"])
    assert result.exit_code == 1 and "does not exist yet" in result.output and "Traceback" not in result.output

    warehouse = synthetic.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    result = CliRunner().invoke(main, ["--warehouse", warehouse, "check-spark", "--as-of", AS_OF, "--workdir", str(blocked / "in")])
    assert result.exit_code == 1 and "the inputs could not be written for Spark" in result.output
