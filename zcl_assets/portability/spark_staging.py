"""Staging's candidate rows computed by Apache Spark's executors.

The Spark side of ``file_candidates`` of the engine seam (``zcl_assets.engine``). The archived
files of a table's changed days become a Spark frame of one row per file (its day, landed name
and archive path), split into one partition per file; each task runs
``zcl_assets.ingest.staging.file_candidates`` over its files on an in-memory DuckDB of its own
(``mapInArrow``), handed to it as an argument: the project's readers of JSON Lines, CSV and Parquet, the contract SQL
generated from ``contracts`` (typed fields, row rules, reasons and records), the isolation of a
file that fails, and the redaction of what a refused row quotes. Spark writes the rows as
Parquet under ``<spark warehouse>/_candidates/<table>/``, which the warehouse reads back.

Why the executors run DuckDB rather than Spark SQL: the contracts' strict JSON types have no
Spark 3.5 equivalent (``from_json`` gives ``5`` for both the text ``"5"`` and the number ``5``
and reads ``"NaN"`` as a number; ``try_to_timestamp`` reads ``2026`` as a date), so a Spark SQL
port would be a second implementation of every rule, which could be made to agree on the cases
tested but not shown to agree on all. Running the one implementation on the executors gives
the rows DuckDB gives by construction, distributed by Spark, since a file's candidate rows
depend on that file alone.

So the executors need the project's Python environment (``duckdb``, ``polars``, ``pyarrow``
and this package): in local mode Spark's Python workers are started with this interpreter; on
a cluster, ``spark.pyspark.python`` (or ``PYSPARK_PYTHON``) names an interpreter of that
environment on every executor (``docs/cluster.md``). The privacy policy, the pseudonym key
included, travels to the tasks inside the task's closure, never in a setting or a log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import duckdb

from zcl_assets.ingest.readers import ArchivedFile
from zcl_assets.privacy.policy import PrivacyPolicy
from zcl_assets.warehouse import session_settings

StageFiles = Callable[[duckdb.DuckDBPyConnection, list[ArchivedFile], PrivacyPolicy], None]
"""Computes the temp table ``candidates`` of some files on a connection (staging's ``file_candidates``)."""

_SPARK_TYPES = {
    "DATE": "DATE", "VARCHAR": "STRING", "JSON": "STRING", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN", "TIMESTAMP WITH TIME ZONE": "TIMESTAMP",
}
"""DuckDB type of a candidate column to Spark's (a JSON value travels as its text)."""


def candidates_folder(location: str, table: str) -> str:
    """Where the candidate rows of ``table`` are written under the Spark warehouse."""
    return str(Path(location) / "_candidates" / table)


def file_candidates(session, columns: list[tuple[str, str]], stage: StageFiles, files: list[ArchivedFile],
                    policy: PrivacyPolicy, folder: str) -> str:
    """Compute the candidate rows of ``files`` on Spark's executors (module docstring) and write
    them as Parquet to ``folder``; returns ``folder``.

    Args:
        session: the Spark session.
        columns: the candidate columns and their DuckDB types, in order (``DESCRIBE candidates``).
        stage: staging's ``file_candidates`` for the table (with the table bound), run by each
            task on its files; Spark pickles it by reference, so the executors import it.
        files: the archived files, every one on a path the executors can read.
        policy: the privacy policy of the night.
        folder: the Parquet folder to write (replaced).

    Raises:
        Exception: whatever Spark raises when its tasks cannot run (an executor without the
            project's environment); a bad file never does, it is a quarantined row.
    """
    rows = [(i, f.partition_day, f.source_file, str(f.path.resolve())) for i, f in enumerate(files)]
    frame = session.createDataFrame(rows, "file_order INT, partition_day STRING, source_file STRING, path STRING")
    schema = ", ".join(f"`{name}` {_SPARK_TYPES[column_type]}" for name, column_type in columns)
    frame.repartitionByRange(len(files), "file_order") \
        .mapInArrow(partial(_task, stage, policy, columns), schema) \
        .write.mode("overwrite").parquet(folder)
    return folder


def _task(stage: StageFiles, policy: PrivacyPolicy, columns: list[tuple[str, str]], batches: Iterator) -> Iterator:
    """One Spark task: the candidate rows of the files of its partition, as Arrow batches."""
    rows = sorted((r for batch in batches for r in batch.to_pylist()), key=lambda r: r["file_order"])
    files = [ArchivedFile(r["partition_day"], r["source_file"], Path(r["path"])) for r in rows]
    if not files:
        return
    with duckdb.connect() as con:
        session_settings(con)
        stage(con, files, policy)
        exported = ", ".join(f'CAST("{n}" AS VARCHAR) AS "{n}"' if t == "JSON" else f'"{n}"' for n, t in columns)
        result = con.execute(f"SELECT {exported} FROM candidates").fetch_arrow_table()
    yield from result.to_batches()


__all__ = ["candidates_folder", "file_candidates"]
