"""The landing store: raw files under ``<root>/<table>/<YYYY-MM-DD>/<file>``.

The landing folder is a boundary: nothing outside it is read. Every entry is resolved
before it is listed. A regular file in a day folder is landed. A symbolic link is landed
only when it resolves to a regular file inside the landing that is not itself landed (a
link to a landed file would read it twice). Everything else is refused, never opened, and
reported by :meth:`LandingStore.stray_files` with the entry's path and why (stage
``landing`` of the quarantine):

- ``link_outside_landing``: a link whose target lies outside the landing folder;
- ``dangling_link``: a link to nothing; ``link_loop``: a link to itself, or a cycle;
- ``linked_file``: a link to a file that is landed where it lies;
- ``linked_folder``: a table or day folder that is a link (its files are not followed);
- ``not_a_regular_file``: a FIFO, a socket or a device, or a link to one (reading a FIFO
  would block the night);
- ``not_readable``: the pipeline's user may not read the file.

The root itself may be a link (a landing mounted elsewhere); it is resolved once.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

import dagster as dg

from zcl_assets.privacy.redaction import redact

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
_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"))


class Refusal(NamedTuple):
    """An entry of the landing that is not read: its rule and why."""

    rule: str
    reason: str


def _kind(mode: int) -> str | None:
    """'a FIFO', 'a socket', 'a ... device' for a special file; None for a regular one."""
    return next((words for test, words in _SPECIAL_KINDS if test(mode)), None if stat.S_ISREG(mode) else "not a regular file")


def _landed_position(root: Path, real: Path) -> bool:
    """``real`` (a resolved path) lies where a landed file lies: ``<table>/<valid day>/<file>``."""
    try:
        parts = real.relative_to(root).parts
    except ValueError:
        return False
    return (len(parts) == 3 and parts[0] in LANDING_TABLES and _DAY.match(parts[1]) is not None and _valid_day(parts[1])
            and not any(p.startswith(".") for p in parts) and real.suffix.lower() in FILE_SUFFIXES)


def refusal(root: Path, path: Path) -> Refusal | None:
    """Why the file entry ``path`` under the resolved ``root`` is not read, or None to read it."""
    try:
        own = path.lstat()
    except OSError as exc:
        return Refusal("not_readable", f"cannot be listed: {exc.strerror}")
    if not stat.S_ISLNK(own.st_mode):
        kind = _kind(own.st_mode)
        if kind is not None:
            return Refusal("not_a_regular_file", f"{kind}, never read")
        return None if os.access(path, os.R_OK) else Refusal("not_readable", "the pipeline's user may not read it")
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        return Refusal("dangling_link", "a link to nothing")
    except (RuntimeError, OSError):  # a link to itself or a cycle: ELOOP
        return Refusal("link_loop", "a link to itself or a cycle of links")
    if real != root and root not in real.parents:
        return Refusal("link_outside_landing", "a link to a file outside the landing folder, never read")
    kind = _kind(real.stat().st_mode)
    if kind is not None:
        return Refusal("not_a_regular_file", f"a link to {kind}, never read")
    if _landed_position(root, real):
        return Refusal("linked_file", f"a link to {real.relative_to(root)}, which is read where it lies")
    return None if os.access(real, os.R_OK) else Refusal("not_readable", "the pipeline's user may not read its target")


class LandingStore(dg.ConfigurableResource):
    """Read-only view of the landing folder (see the module docstring for what is read).

    Attributes:
        root: the landing folder; it need not exist (then nothing has landed).
    """

    root: str

    def _root(self) -> Path:
        return Path(self.root).resolve()

    def _folder(self, table: str, day: str) -> Path | None:
        """The day folder of ``table``, or None when it is missing or a link (never followed)."""
        base = self._root() / table
        folder = base / day
        if base.is_symlink() or folder.is_symlink() or not folder.is_dir():
            return None
        return folder

    def _landed(self, folder: Path) -> list[Path]:
        root = self._root()
        return sorted(
            p for p in folder.iterdir()
            if p.suffix.lower() in FILE_SUFFIXES and not p.name.startswith(".") and not p.is_dir() and refusal(root, p) is None
        )

    def files(self, table: str, day: str) -> list[Path]:
        """Landed files of one table and UTC day, sorted by name.

        Raises ``ValueError`` for a table outside ``LANDING_TABLES``.
        """
        if table not in LANDING_TABLES:
            raise ValueError(f"unknown landing table {table!r}; expected one of {LANDING_TABLES}")
        folder = self._folder(table, day)
        return self._landed(folder) if folder is not None else []

    def _day_folders(self, table: str) -> list[str]:
        base = self._root() / table
        if base.is_symlink() or not base.is_dir():
            return []
        return sorted(f.name for f in base.iterdir() if _DAY.match(f.name) and _valid_day(f.name) and self._folder(table, f.name))

    def days(self) -> list[str]:
        """Every UTC day (``YYYY-MM-DD``) that has at least one landed file, sorted."""
        return sorted({day for table in LANDING_TABLES for day in self._day_folders(table) if self.files(table, day)})

    def stray_files(self) -> list[tuple[str, str, str, str]]:
        """Entries under the landing folder that no partition will ever read.

        Returns (table folder, path relative to the root, rule, reason), sorted by path, for:
        an entry refused at the boundary (module docstring), a file in an unknown table
        folder, a file directly in a table folder, a day folder whose name is not a valid
        ``YYYY-MM-DD`` date, and a file whose suffix is not one of ``FILE_SUFFIXES``. Hidden
        entries (``.name``, e.g. an importer's temporary file) are not reported. Reasons are
        redacted (``zcl_assets.privacy``).
        """
        root = self._root()
        if not root.is_dir():
            return []
        strays = []
        for top, folders, names in os.walk(root, followlinks=False):
            here = Path(top)
            folders[:] = sorted(f for f in folders if not f.startswith("."))
            linked = [f for f in folders if (here / f).is_symlink()]  # listed, never walked into
            for name in [n for n in names if not n.startswith(".")] + linked:
                path = here / name
                found = _folder_link(root, path) if name in linked else _stray(root, path)
                if found is not None:
                    parts = path.relative_to(root).parts
                    strays.append((parts[0] if len(parts) > 1 else "", str(path.relative_to(root)), found.rule, redact(found.reason)))
        return sorted(strays, key=lambda s: s[1])

    def table_fingerprints(self, table: str) -> dict[str, dict[str, tuple[int, int]]]:
        """{day: {file name: (size in bytes, mtime in ns)}} of every landed file of ``table``.

        Only valid ``YYYY-MM-DD`` day folders and landed files count (others are reported by
        :meth:`stray_files`). Raises ``ValueError`` for an unknown table.
        """
        if table not in LANDING_TABLES:
            raise ValueError(f"unknown landing table {table!r}; expected one of {LANDING_TABLES}")
        out: dict[str, dict[str, tuple[int, int]]] = {}
        for day in self._day_folders(table):
            files = {}
            for path in self.files(table, day):
                stat_ = path.stat()
                files[path.name] = (stat_.st_size, stat_.st_mtime_ns)
            if files:
                out[day] = files
        return out

    def fingerprint(self, day: str) -> list[tuple[str, str, int, int]]:
        """(table, file name, size in bytes, mtime in ns) of every file landed on ``day``."""
        rows = []
        for table in LANDING_TABLES:
            for path in self.files(table, day):
                stat_ = path.stat()
                rows.append((table, path.name, stat_.st_size, stat_.st_mtime_ns))
        return rows


def _folder_link(root: Path, path: Path) -> Refusal:
    """A folder entry that is a link: refused, its files never listed."""
    try:
        real = path.resolve(strict=True)
    except (RuntimeError, OSError):
        return Refusal("link_loop", "a link to itself or a cycle of links")
    if real != root and root not in real.parents:
        return Refusal("link_outside_landing", "a link to a folder outside the landing folder, never read")
    return Refusal("linked_folder", "a folder that is a link; its files are not read (land them in the folder itself)")


def _stray(root: Path, path: Path) -> Refusal | None:
    """Why a file entry under ``root`` is never read (the boundary first, then the layout), or None."""
    boundary = refusal(root, path)
    if boundary is not None:
        return boundary
    parts = path.relative_to(root).parts
    table = parts[0] if len(parts) > 1 else ""
    if table not in LANDING_TABLES:
        return Refusal("unknown_table", f"{table or 'the landing root'} is not a landing table {LANDING_TABLES}")
    if len(parts) != 3:
        return Refusal("bad_landing_path", "files go in <table>/<YYYY-MM-DD>/<file>")
    if not (_DAY.match(parts[1]) and _valid_day(parts[1])):
        return Refusal("bad_landing_path", f"day folder {parts[1]!r} is not a valid YYYY-MM-DD date")
    if path.suffix.lower() not in FILE_SUFFIXES:
        return Refusal("unsupported_file_type", f"suffix {path.suffix or '(none)'} is not one of {FILE_SUFFIXES}")
    return None


def _valid_day(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True
