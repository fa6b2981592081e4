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
milliseconds to plan, so a task a file cost more than twice the time; ``docs/performance.md``).

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

import hashlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import duckdb

from contracts.schema import sql_literal
from zcl_assets.ingest.readers import ArchivedFile
from zcl_assets.privacy.policy import PrivacyPolicy
from zcl_assets.warehouse import session_settings

StageFiles = Callable[[duckdb.DuckDBPyConnection, list[ArchivedFile], PrivacyPolicy], None]
"""Computes the temp table ``candidates`` of some files on a connection (staging's ``file_candidates``)."""
SHARES = "task INT, files ARRAY<STRUCT<partition_day: STRING, source_file: STRING, path: STRING>>"
"""The rows Spark hands its tasks: a share of the files each (paths only; the closure carries
the policy, so it stays small and is never broadcast through Spark's temporary files)."""
DONE = "task INT, files INT, rows BIGINT, part STRING"
"""What each task reports: its files, its rows and the Parquet file it wrote (none for no rows)."""
CODE = ("contracts", "sql", "zcl_assets/ingest", "zcl_assets/privacy")
"""The code a task's rows follow, beside the libraries: an executor whose copy differs is refused."""


@dataclass(frozen=True)
class TaskPlan:
    """What every task is handed, besides its share of the files.

    Attributes:
        stage: staging's ``file_candidates`` with the table bound (pickled by reference).
        policy: the privacy policy of the night.
        folder: where the tasks write (an absolute path every executor and this process see).
        environment: :func:`environment` of this process; a task elsewhere refuses to run.
        memory_limit: each task's DuckDB memory limit (the warehouse connection's).
        threads: each task's DuckDB threads (Spark's cores a task).
    """

    stage: StageFiles
    policy: PrivacyPolicy = field(repr=False)
    folder: str
    environment: tuple[str, ...]
    memory_limit: str
    threads: int


def candidates_folder(location: str, table: str) -> str:
    """Where the candidate rows of ``table`` are written under the Spark warehouse."""
    return str(Path(location) / "_candidates" / table)


def file_candidates(session, files: list[ArchivedFile], plan: TaskPlan) -> tuple[list[str], int]:
    """Compute the candidate rows of ``files`` in Spark's tasks (module docstring), each task
    writing those of its share of the files as one Parquet file under ``plan.folder`` (emptied
    first); returns the files written and the rows the tasks reported.

    Raises:
        RuntimeError: the tasks reported other files than they were given.
        Exception: whatever Spark raises when its tasks cannot run (an executor without the
            project's environment, or with another copy of it); a bad file never does, it is a
            quarantined row.
    """
    shutil.rmtree(plan.folder, ignore_errors=True)
    Path(plan.folder).mkdir(parents=True)
    shares = balanced_shares([f.path.stat().st_size if f.path.exists() else 0 for f in files], _parallelism(session))
    rows = [(task, [(files[i].partition_day, files[i].source_file, str(files[i].path.resolve())) for i in share])
            for task, share in enumerate(shares)]
    done = session.createDataFrame(rows, SHARES).repartitionByRange(len(rows), "task") \
        .mapInArrow(partial(_task, plan), DONE).collect()
    if sorted(r["task"] for r in done) != list(range(len(rows))) or sum(r["files"] for r in done) != len(files):
        raise RuntimeError(f"Spark's tasks reported {sum(r['files'] for r in done)} of {len(files)} files")
    return [r["part"] for r in done if r["part"]], sum(r["rows"] for r in done)


def environment() -> tuple[str, ...]:
    """The versions of the libraries a task's rows depend on and a digest of the project's code
    they follow (``CODE``): two processes that agree give the same rows."""
    import polars
    import pyarrow

    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted(p for folder in CODE for p in (root / folder).rglob("*") if p.suffix in (".py", ".sql")):
        digest.update(str(path.relative_to(root)).encode() + b"\x00" + path.read_bytes())
    return duckdb.__version__, polars.__version__, pyarrow.__version__, digest.hexdigest()


def balanced_shares(sizes: list[int], tasks: int) -> list[list[int]]:
    """The positions of ``sizes`` split into at most ``tasks`` non-empty shares of about equal
    total size: largest first, each to the lightest share, each share in position order (the
    longest-processing-time rule: R. L. Graham, "Bounds on multiprocessing timing anomalies",
    SIAM J. Appl. Math. 17(2), 1969, within 4/3 of the best largest share).

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


def _task(plan: TaskPlan, batches: Iterator) -> Iterator:
    """One Spark task: stage the files of each share it gets, write their candidate rows to
    ``<folder>/part-<task>.parquet`` and report them."""
    import pyarrow as pa

    if environment() != plan.environment:
        raise RuntimeError(f"this executor's libraries or code differ from the driver's: {environment()} against {plan.environment}")
    for share in (r for batch in batches for r in batch.to_pylist()):
        files = [ArchivedFile(f["partition_day"], f["source_file"], Path(f["path"])) for f in share["files"]]
        with duckdb.connect() as con:
            session_settings(con)
            con.execute(f"SET memory_limit = {sql_literal(plan.memory_limit)}")
            con.execute(f"SET threads = {int(plan.threads)}")
            plan.stage(con, files, plan.policy)
            (rows,) = con.execute("SELECT count(*) FROM candidates").fetchone()
            part = Path(plan.folder) / f"part-{share['task']:05d}.parquet"
            if rows:  # each attempt of a task writes its own file, then replaces the part whole
                temporary = part.with_name(f".{part.name}.{uuid.uuid4().hex}.tmp")
                con.execute(f"COPY candidates TO {sql_literal(str(temporary))} (FORMAT parquet)")
                os.replace(temporary, part)
        yield pa.record_batch([pa.array([share["task"]], pa.int32()), pa.array([len(files)], pa.int32()),
                               pa.array([rows], pa.int64()), pa.array([str(part) if rows else None], pa.string())],
                              names=["task", "files", "rows", "part"])


__all__ = ["TaskPlan", "balanced_shares", "candidates_folder", "environment", "file_candidates"]
