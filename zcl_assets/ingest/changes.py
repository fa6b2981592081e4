"""What a night has to ingest: the landing days whose files changed since they were loaded.

Shared by the nightly schedule, the landing sensor and ``zcl run``, so all three take the
same decisions. A table's day changed when its files (name, size, modification time) differ
from the current ``landing_manifest``, or when it was loaded but not yet staged (a run killed
in between). The tables whose cross-row rules read a changed table are staged again too.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from contracts.tables import CONTRACTS
from resources.landing import LandingStore
from zcl_assets.ingest.archive import changed_days
from zcl_assets.ingest.staging import STAGING_DEPENDS_ON
from zcl_assets.warehouse import DuckDBWarehouse, tables

# Seconds to wait for another process's write lock before planning without the manifest.
LOCK_WAIT_S = 30.0

Manifest = dict[str, dict[str, dict[str, tuple[int, int, str]]]]


def _loaded_state(warehouse: DuckDBWarehouse) -> tuple[Manifest, dict[str, set[str]] | None]:
    """Current manifest per table and the days waiting to be staged per table (read-only);
    ``None`` for the latter when the warehouse cannot be read (then everything counts as changed)."""
    if not Path(warehouse.path).exists():
        return {}, {}
    try:
        # Wait briefly for a writer (its connections are short); past that, treat every
        # table as changed: loading again is idempotent, only slower.
        reader = DuckDBWarehouse(path=warehouse.path, lock_timeout_s=LOCK_WAIT_S, memory_limit=warehouse.memory_limit)
        with reader.connect(read_only=True) as con:
            present = tables(con)
            if "main.landing_manifest" not in present or "main.raw_records" in present:
                return {}, None
            rows = con.execute(
                "SELECT table_name, CAST(partition_day AS VARCHAR), file_name, size_bytes, mtime_ns, sha256 "
                "FROM landing_manifest WHERE superseded_at IS NULL"
            ).fetchall()
            pending = con.execute("SELECT table_name, CAST(partition_day AS VARCHAR) FROM internal.pending_days").fetchall() \
                if "internal.pending_days" in present else []
    except duckdb.IOException:
        return {}, None
    manifest: Manifest = {}
    for table, day, name, size, mtime, sha in rows:
        manifest.setdefault(table, {}).setdefault(day, {})[name] = (size, mtime, sha)
    waiting: dict[str, set[str]] = {}
    for table, day in pending:
        waiting.setdefault(table, set()).add(day)
    return manifest, waiting


def changed_tables(landing: LandingStore, warehouse: DuckDBWarehouse) -> dict[str, list[str]]:
    """{table: days to load or stage} for every table with something to do, days sorted."""
    manifest, pending = _loaded_state(warehouse)
    out: dict[str, list[str]] = {}
    for table in CONTRACTS:
        days = set(changed_days(landing, manifest.get(table, {}), table))
        days |= (pending or {}).get(table, set()) if pending is not None else set(landing.table_fingerprints(table))
        if days:
            out[table] = sorted(days)
    return out


def tables_to_stage(changed: dict[str, list[str]] | set[str]) -> list[str]:
    """The changed tables and every table whose cross-row rules read one, in staging order."""
    wanted = set(changed)
    grew = True
    while grew:
        grew = False
        for table, deps in STAGING_DEPENDS_ON.items():
            if table not in wanted and wanted & set(deps):
                wanted.add(table)
                grew = True
    return [t for t in CONTRACTS if t in wanted]


__all__ = ["changed_tables", "tables_to_stage"]
