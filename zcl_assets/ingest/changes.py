"""What a night does: which landed days changed since they were last loaded.

Shared by the nightly schedule, the landing sensor and ``zcl run``, so all three take the
same decisions. A day changed when its files (name, size, modification time) differ from
the ``landing_manifest`` recorded when it was last loaded and staged, or it never was.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb

from resources.landing import LANDING_TABLES, LandingStore
from resources.warehouse import Warehouse

# Seconds to wait for another process's write lock before planning without the manifest.
LOCK_WAIT_S = 30.0


def loaded_fingerprints(warehouse_path: str) -> dict[str, set[tuple[str, str, int, int]]]:
    """(table, file, size, mtime) per loaded and staged day, from the manifest (read-only).

    A day loaded but not staged (a run killed in between) does not count, so it is redone.
    """
    if not Path(warehouse_path).exists():
        return {}
    try:
        # Wait briefly for a writer (its connections are short); past that, treat every
        # day as unknown: loading again is idempotent, only slower.
        with Warehouse(path=warehouse_path, lock_timeout_s=LOCK_WAIT_S).connect(read_only=True) as con:
            exists = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = 'landing_manifest'"
            ).fetchone()[0]
            if not exists:
                return {}
            rows = con.execute(
                "SELECT CAST(partition_day AS VARCHAR), table_name, file_name, size_bytes, mtime_ns FROM landing_manifest "
                "WHERE staged_at IS NOT NULL"
            ).fetchall()
    except duckdb.IOException:
        return {}
    out: dict[str, set[tuple[str, str, int, int]]] = {}
    for day, table, name, size, mtime in rows:
        out.setdefault(day, set()).add((table, name, size, mtime))
    return out


def changed_days(landing: LandingStore, warehouse_path: str) -> list[str]:
    """Landed days whose files differ from what was loaded, plus loaded days whose files vanished."""
    loaded = loaded_fingerprints(warehouse_path)
    days = set(landing.days()) | set(loaded)
    return sorted(d for d in days if set(landing.fingerprint(d)) != loaded.get(d, set()))


def contiguous_blocks(days: list[str]) -> list[tuple[str, str]]:
    """Sorted days grouped into (first, last) runs of consecutive days."""
    blocks: list[tuple[str, str]] = []
    for day in sorted(days):
        current = dt.date.fromisoformat(day)
        if blocks and dt.date.fromisoformat(blocks[-1][1]) + dt.timedelta(days=1) == current:
            blocks[-1] = (blocks[-1][0], day)
        else:
            blocks.append((day, day))
    return blocks


__all__ = ["LANDING_TABLES", "changed_days", "contiguous_blocks", "loaded_fingerprints"]
