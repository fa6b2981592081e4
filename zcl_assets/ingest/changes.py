"""What a night has to ingest: the landing tables whose files changed since they were loaded.

Shared by the nightly schedule, the landing sensor and ``zcl run``, so all three take the
same decisions. A table changed when the files of one of its day folders (name, size,
modification time) differ from the current ``landing_manifest``, or when days it loaded are
still waiting to be staged (a run killed in between). Its dependents (tables whose
cross-row rules read it) are staged again too.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from contracts.tables import CONTRACTS
from resources.landing import LandingStore
from resources.warehouse import Warehouse
from zcl_assets.ingest.archive import changed_days
from zcl_assets.ingest.staging import STAGING_DEPENDS_ON

# Seconds to wait for another process's write lock before planning without the manifest.
LOCK_WAIT_S = 30.0


def _loaded_state(warehouse_path: str) -> tuple[dict[str, dict[str, dict[str, tuple[int, int, str]]]], set[str]]:
    """Current manifest per table and the tables with days waiting to be staged (read-only)."""
    if not Path(warehouse_path).exists():
        return {}, set()
    try:
        # Wait briefly for a writer (its connections are short); past that, treat every
        # table as changed: loading again is idempotent, only slower.
        with Warehouse(path=warehouse_path, lock_timeout_s=LOCK_WAIT_S).connect(read_only=True) as con:
            tables = {r[0] for r in con.execute("SELECT table_schema || '.' || table_name FROM information_schema.tables").fetchall()}
            if "main.landing_manifest" not in tables or "main.raw_records" in tables:
                return {}, set(CONTRACTS)
            rows = con.execute(
                "SELECT table_name, CAST(partition_day AS VARCHAR), file_name, size_bytes, mtime_ns, sha256 "
                "FROM landing_manifest WHERE superseded_at IS NULL"
            ).fetchall()
            pending = {r[0] for r in con.execute("SELECT DISTINCT table_name FROM internal.pending_days").fetchall()} \
                if "internal.pending_days" in tables else set()
    except duckdb.IOException:
        return {}, set(CONTRACTS)
    manifest: dict[str, dict[str, dict[str, tuple[int, int, str]]]] = {}
    for table, day, name, size, mtime, sha in rows:
        manifest.setdefault(table, {}).setdefault(day, {})[name] = (size, mtime, sha)
    return manifest, pending


def changed_tables(landing: LandingStore, warehouse_path: str) -> dict[str, list[str]]:
    """{table: days whose files changed} for every table with something to load or stage.

    A table with days loaded but not yet staged appears with an empty list of days.
    """
    manifest, pending = _loaded_state(warehouse_path)
    out: dict[str, list[str]] = {}
    for table in CONTRACTS:
        days = changed_days(landing, manifest.get(table, {}), table)
        if days or table in pending:
            out[table] = days
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
