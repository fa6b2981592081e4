"""Staging's candidate rows computed by Apache Spark's executors.

The Spark side of ``file_candidates`` of the engine seam (``zcl_assets.engine``). The archived
files of a table's changed days are split into as many shares as Spark runs tasks at once, of
about equal bytes (:func:`balanced_shares`), one task a share; each task runs
``zcl_assets.ingest.staging.file_candidates``, handed to it as an argument, over its files on an
in-memory DuckDB of its own (``mapInArrow``): the project's readers of JSON Lines, CSV and
Parquet, the contract SQL generated from ``contracts`` (typed fields, row rules, reasons and
records), the isolation of a file that fails, and the redaction of what a refused row quotes.
The task writes its rows as one Parquet file under ``<spark warehouse>/_candidates/<table>/``
and reports its files to the driver; the warehouse reads the folder back. The rows go from the
task's DuckDB to Parquet directly, not through Spark's rows, and a task validates its share in
one statement per format, as the warehouse does (each statement costs a few hundred
milliseconds to plan, so a task a file cost twice the time; ``docs/performance.md``).

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

import os
import shutil
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import duckdb

from zcl_assets.ingest.readers import ArchivedFile
from zcl_assets.privacy.policy import PrivacyPolicy
from zcl_assets.warehouse import session_settings

StageFiles = Callable[[duckdb.DuckDBPyConnection, list[ArchivedFile], PrivacyPolicy], None]
"""Computes the temp table ``candidates`` of some files on a connection (staging's ``file_candidates``)."""

def candidates_folder(location: str, table: str) -> str:
    """Where the candidate rows of ``table`` are written under the Spark warehouse."""
    return str(Path(location) / "_candidates" / table)


def file_candidates(session, stage: StageFiles, files: list[ArchivedFile], policy: PrivacyPolicy, folder: str) -> str:
    """Compute the candidate rows of ``files`` in Spark's tasks (module docstring), each task
    writing those of its share of the files as one Parquet file under ``folder`` (emptied
    first); returns ``folder``.

    Args:
        session: the Spark session.
        stage: staging's ``file_candidates`` for the table (with the table bound), run by each
            task on its files; Spark pickles it by reference, so the executors import it.
        files: the archived files, every one on a path the executors can read.
        policy: the privacy policy of the night.
        folder: a folder the executors can write and this process read.

    Raises:
        RuntimeError: a task's files are missing from what the tasks reported.
        Exception: whatever Spark raises when its tasks cannot run (an executor without the
            project's environment); a bad file never does, it is a quarantined row.
    """
    shutil.rmtree(folder, ignore_errors=True)
    Path(folder).mkdir(parents=True)
    shares = balanced_shares([f.path.stat().st_size if f.path.exists() else 0 for f in files], _parallelism(session))
    work = [[(files[i].partition_day, files[i].source_file, str(files[i].path.resolve())) for i in share] for share in shares]
    done = session.range(0, len(work), 1, len(work)) \
        .mapInArrow(partial(_task, stage, policy, work, folder), "task BIGINT, files BIGINT, rows BIGINT").collect()
    if sum(r["files"] for r in done) != len(files):
        raise RuntimeError(f"Spark's tasks staged {sum(r['files'] for r in done)} of {len(files)} files")
    return folder


def balanced_shares(sizes: list[int], tasks: int) -> list[list[int]]:
    """The positions of ``sizes`` split into at most ``tasks`` non-empty shares of about equal
    total size: largest first, each to the lightest share (Graham's LPT rule), each share in
    position order.

    >>> balanced_shares([5, 1, 1, 4, 3], 2)
    [[0, 1, 2], [3, 4]]
    """
    shares: list[list[int]] = [[] for _ in range(max(1, min(tasks, len(sizes))))]
    loads = [0] * len(shares)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        lightest = loads.index(min(loads))
        shares[lightest].append(i)
        loads[lightest] += sizes[i]
    return [sorted(share) for share in shares if share]


def _parallelism(session) -> int:
    """How many tasks Spark runs at once: its default parallelism (the cores of local mode or
    of the executors), or ``spark.default.parallelism`` on Spark Connect."""
    try:
        return session.sparkContext.defaultParallelism
    except Exception:  # noqa: BLE001 - a Spark Connect session has no SparkContext here
        return int(session.conf.get("spark.default.parallelism", "2"))


def _task(stage: StageFiles, policy: PrivacyPolicy, work: list[list[tuple[str, str, str]]], folder: str,
          batches: Iterator) -> Iterator:
    """One Spark task: stage the files of its shares of ``work`` (one per id it gets), write
    their candidate rows to ``<folder>/part-<id>.parquet`` and report how many files and rows."""
    import pyarrow as pa

    for task in (t for batch in batches for t in batch.column("id").to_pylist()):
        files = [ArchivedFile(day, name, Path(path)) for day, name, path in work[task]]
        with duckdb.connect() as con:
            session_settings(con)
            stage(con, files, policy)
            (rows,) = con.execute("SELECT count(*) FROM candidates").fetchone()
            part = Path(folder) / f"part-{task:05d}.parquet"
            temporary = part.with_suffix(".tmp")  # a task run again replaces its file whole
            con.execute(f"COPY candidates TO '{temporary}' (FORMAT parquet)")
            os.replace(temporary, part)
        yield pa.record_batch([pa.array([task]), pa.array([len(files)]), pa.array([rows])], names=["task", "files", "rows"])


__all__ = ["balanced_shares", "candidates_folder", "file_candidates"]
