"""The look's SQL aggregates on Apache Spark, checked against DuckDB's on the same warehouse.

The heavy work of a look is the SQL of ``zcl_assets.analysis.look_state.AGGREGATES`` (files
under ``sql/``): the daily sums of the sufficient statistics per experiment, arm, stratum and
day, units first assigned, contract violations, control digests, users in a second arm, first
assignments, built here for the whole history; then the reads of one look from them
(``look_state.READS``). A user who outgrows one
machine runs the same files on Spark: ``zcl run --engine spark`` computes them there
(``zcl_assets.engine``); this module checks one look's files on both engines over one
warehouse, translated by ``zcl_assets.portability.spark_engine.spark_sql``.

:func:`run_on_duckdb` runs every file on DuckDB and exports the warehouse tables and
registered frames the files read to Parquet; :func:`run_on_spark` runs the same files on a
Spark session (local mode or a cluster) over those files and compares the results row by row. ``zcl check-spark`` prints that comparison.
Staging's candidates are computed by Spark's tasks with the project's readers and contract SQL
(``zcl_assets.portability.spark_staging``).

Requires ``pyspark`` (in ``requirements.lock``) and a Java runtime (17 or later) for Spark.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.analysis.look import look_end, state_frames
from zcl_assets.analysis.look_state import AGGREGATES, READS, full_build_inputs
from zcl_assets.portability.spark_engine import exact_columns, spark_session, spark_sql, tables_read, used_params

RELATIVE_TOLERANCE = 1e-12
"""Largest relative difference of two doubles counted as equal: the engines sum doubles in
different orders (exact sums are integers and must match exactly)."""


@dataclass(frozen=True)
class AggregateComparison:
    """One aggregate on both engines."""

    name: str
    duckdb_rows: int
    spark_rows: int
    columns_equal: bool
    differing_rows: int
    """rows of the sorted results that differ in any column (beyond RELATIVE_TOLERANCE for doubles)"""
    max_relative_difference: float
    """largest relative difference of a double column between the engines (0.0 when equal)"""

    @property
    def same(self) -> bool:
        return self.columns_equal and self.duckdb_rows == self.spark_rows and self.differing_rows == 0

    @property
    def verdict(self) -> str:
        """``same``, ``same (no rows on either: nothing compared)`` or ``DIFFERENT``."""
        if not self.same:
            return "DIFFERENT"
        return "same" if self.duckdb_rows else "same (no rows on either: nothing compared)"


@dataclass(frozen=True)
class DuckDBSide:
    """The look's aggregates as DuckDB computed them, and their inputs written as Parquet for Spark."""

    as_of: str
    params: dict
    texts: dict[str, str]
    inputs: dict[str, Path]
    results: dict[str, pl.DataFrame]


def run_on_duckdb(con: duckdb.DuckDBPyConnection, as_of: str, folder: str | os.PathLike[str]) -> DuckDBSide:
    """Run every file of ``AGGREGATES`` for the look ``as_of`` on DuckDB and write every table and
    registered frame the files read to ``<folder>/<name>.parquet``; the connection is not needed
    after this returns.

    Raises:
        OSError: ``folder`` cannot be written to.
    """
    params, frames = full_build_inputs(con, state_frames(con, as_of))
    params = {**params, "as_of_end": look_end(as_of)}
    texts = {name: load_sql(name) for name in (*AGGREGATES, *READS)}
    tables = sorted(set().union(*(tables_read(t) for t in texts.values())) - set(frames))
    Path(folder).mkdir(parents=True, exist_ok=True)
    inputs = {}
    for name in tables:
        inputs[name] = Path(folder) / f"{name}.parquet"
        con.execute(f"COPY (SELECT {exact_columns(con, name)} FROM \"{name}\") TO '{inputs[name]}' (FORMAT parquet)")
    for name, frame in frames.items():
        inputs[name] = Path(folder) / f"{name}.parquet"
        frame.write_parquet(inputs[name])
        con.register(name, frame)
    try:
        results = {name: con.execute(text, used_params(text, params)).pl() for name, text in texts.items()}
    finally:
        for name in frames:
            con.unregister(name)
    return DuckDBSide(as_of, params, texts, inputs, results)


def run_on_spark(spark, side: DuckDBSide) -> list[AggregateComparison]:
    """Run the same files on ``spark`` over the Parquet inputs of ``side`` and compare each result
    with DuckDB's, one :class:`AggregateComparison` per file, in ``AGGREGATES`` then ``READS`` order."""
    for name, path in side.inputs.items():
        spark.read.parquet(str(path)).createOrReplaceTempView(name)
    out = []
    for name, text in side.texts.items():
        want = side.results[name]
        rows = spark.sql(spark_sql(text, side.params)).collect()
        got = pl.DataFrame([r.asDict() for r in rows], schema=want.columns, orient="row", infer_schema_length=None) \
            if rows else pl.DataFrame(schema=want.columns)
        out.append(_compare(name, want, got))
    return out


def _normal(frame: pl.DataFrame) -> pl.DataFrame:
    """Both engines' results in common types: numbers as doubles, times as naive UTC, dates as
    dates, the rest as text."""
    out = []
    for name, dtype in frame.schema.items():
        col = pl.col(name)
        if dtype.is_numeric() or dtype == pl.Boolean or isinstance(dtype, pl.Decimal):
            out.append(col.cast(pl.Float64))
        elif isinstance(dtype, pl.Datetime):
            out.append((col.dt.convert_time_zone("UTC").dt.replace_time_zone(None) if dtype.time_zone else col)
                       .dt.cast_time_unit("us"))
        elif dtype == pl.Date:
            out.append(col)
        elif dtype == pl.Object or dtype == pl.Null:
            out.append(col.cast(pl.String))
        else:
            out.append(col.cast(pl.String))
    return frame.select(out)


def _compare(name: str, want: pl.DataFrame, got: pl.DataFrame) -> AggregateComparison:
    if got.columns != want.columns:
        return AggregateComparison(name, want.height, got.height, False, max(want.height, got.height), math.inf)
    want, got = _normal(want), _normal(got).cast(dict(_normal(want).schema), strict=False)
    keys = [c for c, t in want.schema.items() if t != pl.Float64] + [c for c, t in want.schema.items() if t == pl.Float64]
    want, got = want.sort(keys, nulls_last=True), got.sort(keys, nulls_last=True)
    if want.height != got.height:
        return AggregateComparison(name, want.height, got.height, True, abs(want.height - got.height), math.inf)
    differs = pl.repeat(False, want.height, eager=True)
    worst = 0.0
    for column, dtype in want.schema.items():
        a, b = want.get_column(column), got.get_column(column)
        if dtype == pl.Float64:
            relative = pl.DataFrame({"a": a, "b": b}).select(
                ((pl.col("a") - pl.col("b")).abs() / pl.max_horizontal(pl.col("a").abs(), pl.col("b").abs()))
                .fill_nan(0.0).fill_null(0.0)).to_series()
            off = ((relative > RELATIVE_TOLERANCE) | (a.is_null() != b.is_null())
                   | (a.is_nan().fill_null(False) != b.is_nan().fill_null(False)))
            worst = max(worst, float(relative.max() or 0.0))
        else:
            off = ~a.eq_missing(b)
        differs = differs | off.fill_null(True)
    return AggregateComparison(name, want.height, got.height, True, int(differs.sum()), worst)


__all__ = ["RELATIVE_TOLERANCE", "AggregateComparison", "DuckDBSide", "spark_session", "run_on_duckdb",
           "run_on_spark", "spark_sql", "tables_read"]
