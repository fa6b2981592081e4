"""The engine seam's Spark side: DuckDB SQL translated to Spark SQL, a Spark session, and
:class:`SparkEngine`, which runs the night's statements on Spark (``zcl_assets.engine``).

:func:`spark_sql` translates a file with SQLGlot (DuckDB dialect to Spark) and makes the two
changes Spark needs:

- a CTE's ``MATERIALIZED`` / ``NOT MATERIALIZED`` hint is dropped (Spark plans CTEs itself);
- ``HUGEINT`` (DuckDB's 128-bit integer, used for exact sums) becomes ``DECIMAL(38, 0)``,
  Spark's widest exact integer;

and writes the statement's parameters in as literals.

Requires ``pyspark`` (in ``requirements.lock``) and a Java runtime (17 or later) for Spark.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import time
from pathlib import Path

import duckdb
import sqlglot
from sqlglot import exp

from contracts.schema import sql_literal
from zcl_assets.ingest.readers import ArchivedFile
from zcl_assets.portability import mirror, spark_staging
from zcl_assets.portability.spark_staging import StageFiles
from zcl_assets.privacy.policy import PrivacyPolicy

_log = logging.getLogger(__name__)

def spark_sql(text: str, params: dict[str, object] | None = None) -> str:
    """Spark SQL of one DuckDB SQL file (one statement), parameters written in as literals.

    Args:
        text: the file's text (DuckDB dialect, ``$name`` parameters).
        params: ``{name: value}``; a ``datetime`` becomes a ``TIMESTAMP`` literal in UTC, a
            string a quoted literal, a number itself.

    Raises:
        KeyError: the text uses a parameter ``params`` does not give.
        sqlglot.errors.ParseError: the text is not DuckDB SQL.

    >>> print(spark_sql("WITH t AS NOT MATERIALIZED (SELECT CAST(1 AS HUGEINT) AS x) SELECT x FROM t WHERE $d > 0",
    ...                 {"d": 2}))
    WITH t AS (SELECT CAST(1 AS DECIMAL(38, 0)) AS x) SELECT x FROM t WHERE 2 > 0
    """
    params = params or {}
    tree = sqlglot.parse_one(text, read="duckdb")
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    for node in list(tree.find_all(exp.DataType)):
        if node.this in (exp.DataType.Type.INT128, exp.DataType.Type.UINT128):
            node.replace(exp.DataType.build("DECIMAL(38, 0)"))
    for node in list(tree.find_all(exp.Placeholder)):
        node.replace(_literal(params[node.name]))
    return tree.sql(dialect="spark")


def _literal(value: object) -> exp.Expression:
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, dt.datetime):
        utc = value.astimezone(dt.timezone.utc) if value.tzinfo else value
        return exp.cast(exp.Literal.string(utc.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")), "TIMESTAMP")
    if isinstance(value, str):
        return exp.Literal.string(value)
    return exp.Literal.number(value)


def tables_read(text: str) -> set[str]:
    """Names of the tables a SQL text reads (its CTEs left out)."""
    tree = sqlglot.parse_one(text, read="duckdb")
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    return {t.name for t in tree.find_all(exp.Table)} - ctes


def used_params(text: str, params: dict) -> dict:
    """The parameters ``text`` names (DuckDB refuses one it does not use)."""
    return {k: v for k, v in params.items() if f"${k}" in text}


def exact_columns(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The select list of ``table`` with its 128-bit integers as DECIMAL(38, 0), which Parquet
    keeps exactly (and Spark reads as its widest exact integer)."""
    columns = con.execute(f"DESCRIBE \"{table}\"").fetchall()
    return ", ".join(f'CAST("{n}" AS DECIMAL(38, 0)) AS "{n}"' if t == "HUGEINT" else f'"{n}"' for n, t, *_ in columns)


def spark_session(master: str = "local[2]", warehouse: str = ""):
    """A Spark session on ``master`` (default: local mode on two cores), in UTC, without its web UI;
    ``warehouse`` is its ``spark.sql.warehouse.dir`` (Spark's default when empty). A Spark Connect
    URL (``sc://host:port``) connects to that server instead of starting a driver here.

    Raises:
        ImportError: pyspark is not installed.
        Exception: whatever Spark raises when it cannot start on ``master`` (its errors come
            from the JVM in many types).
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.remote(master) if master.startswith("sc://") else SparkSession.builder.master(master)
    builder = (builder.appName("zcl-night")
               .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
               # times handed back to DuckDB as instants (INT96 would lose the time zone)
               .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
               # DuckDB's to_json keeps null fields: so must Spark's
               .config("spark.sql.jsonGenerator.ignoreNullFields", "false"))
    if warehouse:
        builder = builder.config("spark.sql.warehouse.dir", warehouse)
    if master.startswith("local"):
        # one machine: a few shuffle partitions, not Spark's 200 tasks per shuffle
        builder = builder.config("spark.sql.shuffle.partitions", "8")
        # the Python workers of staging's tasks run this interpreter, with the project's
        # packages, unless PYSPARK_PYTHON names another (pyspark reads only the variable)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # DuckDB writes dates and times on the proleptic Gregorian calendar, as Spark 3 does: read
    # them as they are (0001-01-01, the first day of a first build, is a valid date)
    for key in ("datetimeRebaseModeInRead", "datetimeRebaseModeInWrite", "int96RebaseModeInRead", "int96RebaseModeInWrite"):
        builder = builder.config(f"spark.sql.parquet.{key}", "CORRECTED")
    session = builder.getOrCreate()
    if not master.startswith("sc://"):  # a Spark Connect session has no SparkContext here
        session.sparkContext.setLogLevel("ERROR")
    return session


class SparkEngine:
    """The night's SQL on Apache Spark (``zcl_assets.engine``): each statement's query is translated
    by :func:`spark_sql` and run on Spark over the tables it reads, which are mirrored from the
    warehouse as Parquet under ``location`` (``<location>/<table>/``: the staged tables,
    verification records and experience one file a day, rewritten only where a day changed,
    the frames of the night whole; ``mirror``); the result is written
    by Spark as Parquet under ``<location>/_results/<table>/`` and read from there into the
    warehouse by the statement's own ``CREATE`` or ``INSERT``.

    An engine is opened for one asset's statements (``resources.engine.ComputeEngine.open``):
    a table it mirrored is reused by that asset's later statements, except the tables its own
    statements write, which are mirrored again when read. The statements of an asset change
    nothing else that a later one reads (the ``DELETE`` of the rows a night replaces touches
    the tables being written), so the mirrors stay those of the warehouse.

    Attributes:
        master: Spark's master URL.
        location: the Spark warehouse (a folder this process and every executor can read).
    """

    name = "spark"

    def __init__(self, master: str, location: str) -> None:
        self.master, self.location = master, location
        self._session = None
        self._mirrored: set[str] = set()

    @property
    def session(self):
        """The process's Spark session on ``master`` (started on first use, then shared)."""
        if self._session is None:
            self._session = spark_session(self.master, self.location)
        return self._session

    def execute(self, con: duckdb.DuckDBPyConnection, text: str, params: dict | None = None) -> None:
        """Run ``text`` (CREATE ... AS SELECT or INSERT ... SELECT) with its query on Spark; the
        seconds spent mirroring the inputs, on Spark and handing the rows back are logged.

        Raises:
            ValueError: ``text`` is another kind of statement (those run on the warehouse).
        """
        statement = sqlglot.parse_one(text, read="duckdb")
        query = statement.expression if isinstance(statement, (exp.Create, exp.Insert)) else None
        if not isinstance(query, exp.Query):
            raise ValueError(f"not a statement that writes a query's rows: {text[:80]!r}")
        duck = query.sql(dialect="duckdb")
        clock = [time.perf_counter()]
        for name in sorted(tables_read(duck) - self._mirrored):
            self._mirror(con, name)
        clock.append(time.perf_counter())
        self._mirrored.discard(_target(statement))  # written now: mirrored again when read
        folder = f"{self.location}/_results/{_target(statement)}"
        self.session.sql(spark_sql(_named_outputs(query.copy()).sql(dialect="duckdb"), params)) \
            .write.mode("overwrite").parquet(folder)
        clock.append(time.perf_counter())
        result = f"read_parquet('{folder}/*.parquet')"
        if isinstance(statement, exp.Create):
            temp = "TEMP " if statement.find(exp.TemporaryProperty) else ""
            name = statement.this.sql(dialect="duckdb")
            # the table takes the types DuckDB's own query gives, then Spark's rows by name
            con.execute(f"CREATE OR REPLACE {temp}TABLE {name} AS SELECT * FROM ({duck}) LIMIT 0", used_params(duck, params or {}))
            con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM {result}")
        else:
            into = statement.this.sql(dialect="duckdb")
            con.execute(f"INSERT INTO {into} {'BY NAME ' if statement.args.get('by_name') else ''}SELECT * FROM {result}")
        clock.append(time.perf_counter())
        _log.info("spark %s: mirror %.2f s, spark %.2f s, back %.2f s", _target(statement),
                  *(b - a for a, b in zip(clock, clock[1:], strict=False)))

    def file_candidates(self, con: duckdb.DuckDBPyConnection, table: str, files: list[ArchivedFile],
                        policy: PrivacyPolicy, stage: StageFiles) -> list[str] | None:
        """Compute the candidate rows of the archived ``files`` of ``table`` on Spark's executors,
        each task running ``stage`` (``spark_staging``) and writing its rows as Parquet under
        ``<location>/_candidates/<table>/``, and return those files once their rows are those
        the tasks reported; None when Spark's tasks cannot run or their files do not hold their
        rows here (logged), so that this process computes them."""
        start = time.perf_counter()
        plan = spark_staging.TaskPlan(
            stage, policy, os.path.abspath(spark_staging.candidates_folder(self.location, table)), spark_staging.environment(),
            con.execute("SELECT current_setting('memory_limit')").fetchone()[0],
            int(self.session.conf.get("spark.task.cpus", "1")))
        try:
            parts, rows = spark_staging.file_candidates(self.session, files, plan)
            listed = ", ".join(sql_literal(p) for p in parts)
            found = con.execute(f"SELECT count(*) FROM read_parquet([{listed}])").fetchone()[0] if parts else 0
            if found != rows:
                raise RuntimeError(f"the tasks reported {rows} rows and their files hold {found} here")
        except Exception as exc:  # noqa: BLE001 - Spark's errors come from the JVM in many types
            _log.warning("spark could not stage the files of %s, staged here instead: %s", table, _first_line(exc))
            return None
        _log.info("spark %s: %d files staged in %.2f s", table, len(files), time.perf_counter() - start)
        return parts

    def _mirror(self, con: duckdb.DuckDBPyConnection, name: str) -> None:
        """``name`` (a table, view or registered frame of ``con``) as Parquet under the Spark
        warehouse, rewritten where it changed (``mirror``), and a Spark view of it by the same name."""
        files = mirror.mirror_table(con, name, exact_columns(con, name), Path(self.location) / name)
        self.session.read.parquet(*files).createOrReplaceTempView(name)
        self._mirrored.add(name)


def _first_line(exc: BaseException) -> str:
    """The line of an error that says what went wrong: a Python task's last line of error
    (``PythonException``), else the message's first line, else the error's type."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    caused = [line for line in lines if line.startswith(("RuntimeError", "PythonException", "ModuleNotFoundError"))]
    return (caused or lines or [type(exc).__name__])[-1 if caused else 0]


def _target(statement: exp.Expression) -> str:
    """The name of the table a statement writes (``select`` for a plain query)."""
    if not isinstance(statement, (exp.Create, exp.Insert)):
        return "select"
    target = statement.this
    return (target.this if isinstance(target, exp.Schema) else target).name


def _named_outputs(query: exp.Query) -> exp.Query:
    """``query`` with every unnamed output column named ``_c<i>`` (Parquet refuses Spark's
    generated names); a positional INSERT reads them by position, so nothing else changes."""
    select = query
    while isinstance(select, exp.SetOperation):
        select = select.this
    if isinstance(select, exp.Select):
        for i, column in enumerate(list(select.expressions)):
            if not isinstance(column, (exp.Alias, exp.Column, exp.Star)):
                column.replace(exp.alias_(column.copy(), f"_c{i}"))
    return query


__all__ = ["SparkEngine", "exact_columns", "spark_session", "spark_sql", "tables_read", "used_params"]
