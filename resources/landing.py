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
        return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in FILE_SUFFIXES and not p.name.startswith("."))

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

    def stray_files(self) -> list[tuple[str, str, str, str]]:
        """Files under the landing folder that no partition will ever read.

        Returns (table folder, path relative to the root, rule, reason) for: a file in an
        unknown table folder, a file directly in a table folder, a day folder whose name is
        not a valid ``YYYY-MM-DD`` date, and a file whose suffix is not one of
        ``FILE_SUFFIXES``. Hidden files (``.name``, e.g. an importer's temporary file) are
        not reported.
        """
        root = Path(self.root)
        if not root.is_dir():
            return []
        strays = []
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = path.relative_to(root)
            if any(part.startswith(".") for part in rel.parts):
                continue
            parts = rel.parts
            table = parts[0] if len(parts) > 1 else ""
            if table not in LANDING_TABLES:
                strays.append((table, str(rel), "unknown_table", f"{table or 'the landing root'} is not a landing table {LANDING_TABLES}"))
            elif len(parts) != 3:
                strays.append((table, str(rel), "bad_landing_path", "files go in <table>/<YYYY-MM-DD>/<file>"))
            elif not (_DAY.match(parts[1]) and _valid_day(parts[1])):
                strays.append((table, str(rel), "bad_landing_path", f"day folder {parts[1]!r} is not a valid YYYY-MM-DD date"))
            elif path.suffix.lower() not in FILE_SUFFIXES:
                strays.append((table, str(rel), "unsupported_file_type", f"suffix {path.suffix or '(none)'} is not one of {FILE_SUFFIXES}"))
        return strays

    def table_fingerprints(self, table: str) -> dict[str, dict[str, tuple[int, int]]]:
        """{day: {file name: (size in bytes, mtime in ns)}} of every landed file of ``table``.

        Only valid ``YYYY-MM-DD`` day folders and supported file types count (others are
        reported by :meth:`stray_files`). Raises ``ValueError`` for an unknown table.
        """
        if table not in LANDING_TABLES:
            raise ValueError(f"unknown landing table {table!r}; expected one of {LANDING_TABLES}")
        base = Path(self.root) / table
        out: dict[str, dict[str, tuple[int, int]]] = {}
        if not base.is_dir():
            return out
        for folder in base.iterdir():
            if not (folder.is_dir() and _DAY.match(folder.name) and _valid_day(folder.name)):
                continue
            files = {}
            for path in folder.iterdir():
                if path.is_file() and path.suffix.lower() in FILE_SUFFIXES and not path.name.startswith("."):
                    stat = path.stat()
                    files[path.name] = (stat.st_size, stat.st_mtime_ns)
            if files:
                out[folder.name] = files
        return out

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
