"""The raw layer: landed files archived by content, and the manifest of what was loaded.

Landed files may be replaced or removed (a correction); raw history must not be. When a
table's day changed (its files differ in name, size or modification time from the current
manifest), every file of that day is copied into the archive under its SHA-256 and counted,
the day's previous manifest rows are marked superseded (never deleted) and the day is queued
for staging. Staging reads the archived copies, so what is staged is exactly what was
hashed, and any row can be replayed from its archive path and row number.

A day whose files changed only in modification time (same names and contents) is not
staged again: its manifest rows are renewed.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import duckdb
import polars as pl

from resources.landing import LandingStore
from sql import load_sql
from zcl_assets.ingest.readers import ArchivedFile, count_rows
from zcl_assets.privacy.files import keep_private
from zcl_assets.warehouse import transaction

_CHUNK = 1 << 20


class DayLoad(NamedTuple):
    """One (table, day) loaded into the archive: files, raw rows and what changed."""

    partition_day: str
    files: int
    rows: int
    change: str  # "new", "changed", "removed" or "touched" (same contents, new file times)


@dataclass(frozen=True)
class LoadResult:
    """What one raw load did for one table."""

    table: str
    days: list[DayLoad]

    @property
    def rows(self) -> int:
        return sum(d.rows for d in self.days if d.change != "removed")

    @property
    def files(self) -> int:
        return sum(d.files for d in self.days)


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes (``hashlib``), read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def archive_path(archive_root: Path, table: str, day: str, name: str, sha256: str) -> Path:
    """Where a landed file's bytes are kept: ``<root>/<table>/<day>/<sha256[:16]>-<name>``."""
    return archive_root / table / day / f"{sha256[:16]}-{name}"


def current_manifest(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, dict[str, tuple[int, int, str]]]:
    """{day: {file: (size, mtime_ns, sha256)}} of the files currently loaded for ``table``."""
    rows = con.execute(load_sql("select_current_manifest"), {"table": table}).fetchall()
    out: dict[str, dict[str, tuple[int, int, str]]] = {}
    for day, name, size, mtime, sha in rows:
        out.setdefault(day, {})[name] = (size, mtime, sha)
    return out


def changed_days(landing: LandingStore, manifest: dict[str, dict[str, tuple[int, int, str]]], table: str) -> list[str]:
    """Days of ``table`` whose landed files differ (name, size, mtime) from the manifest."""
    landed = landing.table_fingerprints(table)
    days = set(landed) | set(manifest)
    return sorted(
        d for d in days
        if {n: (s, m) for n, (s, m) in landed.get(d, {}).items()} != {n: (s, m) for n, (s, m, _) in manifest.get(d, {}).items()}
    )


def load_table(
    con: duckdb.DuckDBPyConnection, landing: LandingStore, archive_root: Path, table: str, redo_days: tuple[str, ...] = (),
    days: Sequence[str] | None = None,
) -> LoadResult:
    """Archive and count every changed day of ``table`` (among ``days`` when given); queue those
    days for staging.

    Args:
        con: an open warehouse write connection.
        landing: the landing store.
        archive_root: the archive folder (created if needed).
        table: a landing table.
        redo_days: days to load and stage again even if their files did not change.
        days: the days to look at (a run's partitions); None: every day.

    Returns:
        A :class:`LoadResult` with one entry per day loaded. All manifest and queue writes
        happen in one transaction after the files are archived, so a killed load leaves
        the previous state (archive copies are content-addressed and harmless to repeat).
    """
    manifest = current_manifest(con, table)
    changed = set(changed_days(landing, manifest, table))
    days = sorted((changed if days is None else changed & set(days)) | set(redo_days))
    if not days:
        return LoadResult(table, [])
    landed = {day: landing.files(table, day) for day in days}
    keep_private(archive_root)  # it holds the landed bytes as they came (zcl_assets.privacy.files)
    with ThreadPoolExecutor(max_workers=2) as pool:
        hashes = dict(zip(
            [p for paths in landed.values() for p in paths],
            pool.map(sha256_of, [p for paths in landed.values() for p in paths]),
        ))
    rows, queued, loads = [], [], []
    for day in days:
        new = {}
        for path in landed[day]:
            stat = path.stat()
            sha = hashes[path]
            target = archive_path(archive_root, table, day, path.name, sha)
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f".{target.name}.partial")
                shutil.copyfile(path, partial)
                partial.replace(target)
            n = count_rows(con, ArchivedFile(day, path.name, target))
            new[path.name] = (stat.st_size, stat.st_mtime_ns, sha, str(target), n)
        before = manifest.get(day, {})
        same_contents = {n: v[2] for n, v in new.items()} == {n: v[2] for n, v in before.items()}
        if not new:
            change = "removed"
        elif not before:
            change = "new"
        elif same_contents and day not in redo_days:
            change = "touched"
        else:
            change = "changed"
        if change != "touched":
            queued.append(day)
        rows += [(day, name, *values) for name, values in new.items()]
        loads.append(DayLoad(day, len(new), sum(v[4] for v in new.values()), change))
    batch = pl.DataFrame(
        rows,
        schema={"partition_day": pl.String, "file_name": pl.String, "size_bytes": pl.Int64, "mtime_ns": pl.Int64,
                "sha256": pl.String, "archive_path": pl.String, "row_count": pl.Int64},
        orient="row",
    ).with_columns(pl.col("partition_day").str.to_date())
    days_batch = pl.DataFrame({"partition_day": days}).with_columns(pl.col("partition_day").str.to_date())
    queued_batch = pl.DataFrame({"partition_day": queued}, schema={"partition_day": pl.String}).with_columns(
        pl.col("partition_day").str.to_date()
    )
    with transaction(con, manifest_batch=batch, days_batch=days_batch, queued_batch=queued_batch):
        con.execute(load_sql("supersede_manifest_days"), {"table": table})
        con.execute(load_sql("insert_manifest_files"), {"table": table})
        con.execute(load_sql("insert_pending_days"), {"table": table})
    return LoadResult(table, loads)
