"""Write one partition: raw rows from landed files, then staged and quarantined rows.

Each write deletes the partition's previous rows and inserts the new ones in one
transaction, so re-running a partition is idempotent and a killed run leaves the previous
rows intact.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import duckdb
import polars as pl

from contracts.validate import validate_partition
from resources.landing import LandingStore
from resources.warehouse import transaction
from sql import load_sql
from zcl_assets.ingest.landing_reader import read_landed_file


class RawLoad(NamedTuple):
    """Raw rows loaded for one table and day, the files read and those unreadable."""

    rows: int
    files: int
    unreadable: list[str]


class StageResult(NamedTuple):
    """Counts of one staged partition; ``raw == staged + quarantined`` always."""

    raw: int
    staged: int
    quarantined: int
    by_rule: dict[str, int]
    quarantine_preview: pl.DataFrame


def load_raw_partition(con: duckdb.DuckDBPyConnection, landing: LandingStore, table: str, day: str) -> RawLoad:
    """Replace the raw rows of ``table``/``day`` with the rows of the files landed there."""
    paths = landing.files(table, day)
    params = {"table": table, "day": day}
    if not paths and not con.execute(load_sql("count_raw_partition"), params).fetchone()[0]:
        return RawLoad(rows=0, files=0, unreadable=[])  # nothing landed, nothing to replace
    files, rows, manifest, unreadable = [], [], [], []
    for path in paths:
        file_rows, error = read_landed_file(path)
        if error is not None:
            unreadable.append(f"{path.name}: {error}")
            file_rows = [(1, f"unreadable file: {error}")]
        stat = path.stat()
        manifest.append((path.name, stat.st_size, stat.st_mtime_ns, len(file_rows)))
        rows.extend((path.name, number, record) for number, record in file_rows)
        files.append(path.name)
    raw_batch = pl.DataFrame(
        rows, schema={"source_file": pl.String, "source_row": pl.Int64, "record": pl.String}, orient="row"
    )
    manifest_batch = pl.DataFrame(
        manifest,
        schema={"file_name": pl.String, "size_bytes": pl.Int64, "mtime_ns": pl.Int64, "row_count": pl.Int64},
        orient="row",
    )
    with transaction(con, raw_batch=raw_batch, manifest_batch=manifest_batch):
        con.execute(load_sql("delete_raw_partition"), params)
        con.execute(load_sql("insert_raw_rows"), params)
        con.execute(load_sql("delete_manifest_partition"), params)
        con.execute(load_sql("insert_manifest_rows"), params)
    return RawLoad(rows=raw_batch.height, files=len(files), unreadable=unreadable)


def stage_partition(con: duckdb.DuckDBPyConnection, table: str, day: str) -> StageResult:
    """Validate the raw rows of ``table``/``day`` and replace its staged and quarantined rows."""
    raw, staged, quarantined = count_partition_rows(con, table, day)
    if raw == staged == quarantined == 0:
        return StageResult(raw=0, staged=0, quarantined=0, by_rule={}, quarantine_preview=pl.DataFrame())
    result = validate_partition(con, table, day)
    staged_table = f"staged_{table}"
    params = {"table": table, "day": day}
    with transaction(con, staged_batch=result.staged, quarantine_batch=result.quarantined):
        con.execute(load_sql("delete_staged_partition").format(staged=staged_table), {"day": day})
        if result.staged.height:
            con.execute(load_sql("insert_staged_rows").format(staged=staged_table), {"day": day})
        con.execute(load_sql("delete_quarantine_partition"), params)
        if result.quarantined.height:
            con.execute(load_sql("insert_quarantine_rows"), params)
        con.execute(load_sql("mark_manifest_staged"), params)
    by_rule = dict(Counter(result.quarantined.get_column("rule").to_list()))
    return StageResult(
        raw=result.staged.height + result.quarantined.height,
        staged=result.staged.height,
        quarantined=result.quarantined.height,
        by_rule=by_rule,
        quarantine_preview=result.quarantined.head(10),
    )


def count_partition_rows(con: duckdb.DuckDBPyConnection, table: str, day: str) -> tuple[int, int, int]:
    """(raw, staged, quarantined) rows of one partition as stored in the warehouse."""
    sql = load_sql("count_partition_rows").format(staged=f"staged_{table}")
    return con.execute(sql, {"table": table, "day": day}).fetchone()
