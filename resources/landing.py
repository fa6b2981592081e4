"""The landing store: raw files under ``<root>/<table>/<YYYY-MM-DD>/<file>``."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import dagster as dg

LANDING_TABLES: tuple[str, ...] = (
    "experiments",
    "experiment_events",
    "sessions",
    "assignments",
    "outcomes",
    "admission_events",
    "arm_snapshots",
)
FILE_SUFFIXES: tuple[str, ...] = (".jsonl", ".json", ".ndjson", ".csv", ".parquet")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class LandingStore(dg.ConfigurableResource):
    """Read-only view of the landing folder.

    Attributes:
        root: the landing folder; it need not exist (then nothing has landed).
    """

    root: str

    def files(self, table: str, day: str) -> list[Path]:
        """Landed files of one table and UTC day, sorted by name.

        Raises ``ValueError`` for a table outside ``LANDING_TABLES``.
        """
        if table not in LANDING_TABLES:
            raise ValueError(f"unknown landing table {table!r}; expected one of {LANDING_TABLES}")
        folder = Path(self.root) / table / day
        if not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in FILE_SUFFIXES)

    def days(self) -> list[str]:
        """Every UTC day (``YYYY-MM-DD``) that has at least one landed file, sorted."""
        found: set[str] = set()
        root = Path(self.root)
        for table in LANDING_TABLES:
            base = root / table
            if not base.is_dir():
                continue
            for folder in base.iterdir():
                if folder.is_dir() and _DAY.match(folder.name) and _valid_day(folder.name):
                    if any(p.suffix.lower() in FILE_SUFFIXES for p in folder.iterdir()):
                        found.add(folder.name)
        return sorted(found)

    def fingerprint(self, day: str) -> list[tuple[str, str, int, int]]:
        """(table, file name, size in bytes, mtime in ns) of every file landed on ``day``."""
        rows = []
        for table in LANDING_TABLES:
            for path in self.files(table, day):
                stat = path.stat()
                rows.append((table, path.name, stat.st_size, stat.st_mtime_ns))
        return rows


def _valid_day(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True
