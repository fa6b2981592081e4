"""The DuckDB warehouse, without Dagster: connect, transactions, the schema and its inventory.

The file is opened only for the duration of one ``connect()`` block and always closed, even
when the body raises, so analysts can open the file read-only between runs; within
:func:`held_open` (the block of an in-process run), the connections are cursors of one open
file, closed when the block ends. Every connection
runs with ``TimeZone=UTC`` so that naive timestamps are UTC and offsets are kept
(``TIMESTAMPTZ``). ``resources.warehouse.Warehouse`` is the Dagster resource over this.
"""

from __future__ import annotations

import errno
import glob
import logging
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import duckdb
from filelock import FileLock

from contracts.schema import staged_ddl
from contracts.tables import CONTRACTS
from sql import load_sql

_log = logging.getLogger(__name__)

# DDL applied on every write connection, in order; each statement is idempotent. The staged
# and held tables of the landing contracts follow (their DDL derives from contracts.tables).
SCHEMA_FILES: tuple[str, ...] = (
    "create_internal_schema",
    "create_landing_manifest",
    "create_pending_days",
    "create_staging_state",
    "create_change_log",
    "create_change_cursors",
    "create_change_sequence",
    "create_quarantine",
)
# The analysis tables (experiment_plans, experiment_analysis, knowledge_records) are created
# by their assets from their one schema definition (zcl_assets/analysis/schema.py).
# Tables of the layout before the archive (raw rows as JSON text, staged DDL of its own):
# their contents derive from the landing folder, so they are dropped and rebuilt.
_LEGACY_TABLES = ("raw_records", "landing_manifest", *(c.staged_table for c in CONTRACTS.values()))

DEFAULT_MEMORY_LIMIT = "2500MB"
_SIZE = re.compile(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)", re.IGNORECASE)


def check_memory_limit(value: str, source: str = "memory_limit") -> str:
    """``value`` if it is a DuckDB size (``2500MB``, ``4GB``, ``3.5GiB``); else ``ValueError``
    naming ``source`` (where the value came from), so a typo is reported before a run starts
    and never pasted into SQL.

    >>> check_memory_limit("4GB")
    '4GB'
    >>> check_memory_limit("banana", "ZCL_DUCKDB_MEMORY_LIMIT")
    Traceback (most recent call last):
    ...
    ValueError: ZCL_DUCKDB_MEMORY_LIMIT='banana' is not a DuckDB memory size such as 2500MB, 4GB or 3.5GiB
    """
    if not _SIZE.fullmatch(value.strip()):
        raise ValueError(f"{source}={value!r} is not a DuckDB memory size such as 2500MB, 4GB or 3.5GiB")
    return value.strip()


def session_settings(con: duckdb.DuckDBPyConnection) -> None:
    """The settings every connection of the night runs with, the warehouse's and those of
    Spark's staging tasks alike: times in UTC (naive timestamps are UTC, offsets kept)."""
    con.execute("SET TimeZone = 'UTC'")
    # Every read that needs an order says ORDER BY, so DuckDB may stream inserts in any
    # order: this lets large joins and windows spill instead of holding the whole result
    # in memory.
    con.execute("SET preserve_insertion_order = false")


@dataclass(frozen=True)
class DuckDBWarehouse:
    """A DuckDB file holding raw, staged, quarantine and analysis tables.

    Attributes:
        path: path of the DuckDB file; its folder is created on first write.
        lock_timeout_s: how long a writer waits for another process's write lock before
            raising ``duckdb.IOException`` (DuckDB allows one writer process at a time).
        memory_limit: DuckDB's memory limit per connection (it spills to disk beyond it).
    """

    path: str
    lock_timeout_s: float = 600.0
    memory_limit: str = DEFAULT_MEMORY_LIMIT

    @property
    def archive_dir(self) -> Path:
        """Folder of the archived landed files: ``<warehouse file stem>_archive`` beside it."""
        path = Path(self.path)
        return path.with_name(f"{path.stem}_archive")

    @contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """Open the file, yield a connection, and close it on exit (also on error).

        A write connection ensures the schema first and checkpoints without DuckDB's vacuum. Raises ``FileNotFoundError`` for a
        read-only connection to a file that does not exist yet, and ``duckdb.IOException``
        if another process holds the write lock for longer than ``lock_timeout_s``.
        """
        db_path = Path(self.path)
        if read_only and not db_path.exists():
            raise FileNotFoundError(f"warehouse {db_path} does not exist yet: run `zcl run` first")
        db_path.parent.mkdir(parents=True, exist_ok=True)
        key = str(db_path.resolve())
        held, con = self._cursor_of_held(key)
        con = con or self._open(db_path, read_only)
        try:
            session_settings(con)
            con.execute(f"SET memory_limit = '{check_memory_limit(self.memory_limit)}'")
            if not read_only:
                # No vacuum at the checkpoints: it would merge a table's partial last row group
                # with the row groups a night appends, rewriting and recompressing all of them
                # (1.1 to 1.7 s for the experience at 10M). Row groups emptied entirely are
                # still dropped; those left partial by an append or thinned by deletes are not
                # merged.
                con.execute("SET max_vacuum_tasks = 0")
                if not (held and held.ensured):
                    ensure_schema(con)
                if held:  # a held file's schema stays ensured while its database is open
                    held.ensured = True
            yield con
        except (duckdb.FatalException, duckdb.InternalException):
            if held:  # DuckDB invalidates the database after these: the next connection opens the file again
                with _GUARD:
                    held.let_go()
            raise
        finally:
            con.close()
            if held:
                with _GUARD:
                    held.cursors -= 1

    def _cursor_of_held(self, key: str) -> tuple[_HeldFile | None, duckdb.DuckDBPyConnection | None]:
        """The file ``key`` that :func:`held_open` holds and a new cursor of its database, counted in
        use (the database is opened here on first use: read-write, since writes follow); two Nones
        when the file is not held."""
        with _GUARD:
            held = _HELD.get(key)
            if held is None:
                return None, None
            if held.database is None:
                held.database = self._open(Path(key), False)
            cursor = held.database.cursor()
            held.cursors += 1
            return held, cursor

    def _open(self, db_path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
        if not read_only and not db_path.exists():
            create_warehouse(db_path)
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.05
        said = False
        while True:
            try:
                return duckdb.connect(str(db_path), read_only=read_only)
            except duckdb.IOException as exc:  # another process holds the file lock
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                if not said and delay >= 1.0:  # a wait a person notices: say why, once
                    holder = re.search(r"PID \d+", str(exc))
                    _log.warning("waiting for %s, which another process%s holds open, up to %.0f s",
                                 db_path, f" ({holder.group(0)})" if holder else "", self.lock_timeout_s)
                    said = True
                time.sleep(delay)
                delay = min(delay * 2, 2.0)


def create_warehouse(db_path: Path) -> None:
    """Create the warehouse file with its landing and staging tables, or no file at all.

    The schema is written to a file of this process's own beside it
    (``.<name>.<host>.<pid>.<token>.new``), checkpointed, and linked in under the warehouse's
    name: ``os.link`` fails when the name exists, so of two processes creating it at once, the
    second keeps the first's file. On a file system without hard links it is renamed in under a
    lock file, unless the warehouse exists by then. A process killed meanwhile leaves no
    warehouse, only its own file, which a later creation on the same host removes once that
    process is gone; so a reader never finds a warehouse without those tables
    (``tests/end_to_end/test_fault_injection.py``).
    """
    _sweep_scratch(db_path)
    scratch = db_path.with_name(f".{db_path.name}.{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}.new")
    wal = scratch.with_name(f"{scratch.name}.wal")
    try:
        with duckdb.connect(str(scratch)) as con:
            session_settings(con)
            ensure_schema(con)
            con.execute("CHECKPOINT")  # raises if it fails, where closing would not say
        if wal.exists():
            raise RuntimeError(f"the schema of {db_path} was not checkpointed into {scratch}")
        try:
            os.link(scratch, db_path)
        except FileExistsError:
            pass  # another process created it first
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            with FileLock(str(db_path.with_name(f".{db_path.name}.create.lock"))):  # no hard links here
                if not db_path.exists():
                    os.replace(scratch, db_path)
    finally:
        scratch.unlink(missing_ok=True)
        wal.unlink(missing_ok=True)
        _sweep_scratch(db_path)


def _sweep_scratch(db_path: Path) -> None:
    """Remove the scratch files of :func:`create_warehouse` left by processes of this host that are gone (best effort)."""
    mine = re.compile(rf"\.{re.escape(db_path.name)}\.{re.escape(socket.gethostname())}\.(\d+)\.[0-9a-f]+\.new(\.wal)?")
    for path in db_path.parent.glob(f".{glob.escape(db_path.name)}.*.new*"):
        found = mine.fullmatch(path.name)
        if found and not process_alive(int(found.group(1))):
            with suppress(OSError):
                path.unlink()


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


@dataclass
class _HeldFile:
    """A file :func:`held_open` holds: its open database (None until a connection opens it, or
    after it was let go), the cursors of it in use, and whether its schema was ensured."""

    path: str
    database: duckdb.DuckDBPyConnection | None = None
    cursors: int = 0
    ensured: bool = False

    def let_go(self) -> None:
        """Close the database (checkpointed): the next connection opens the file again."""
        database, self.database, self.ensured = self.database, None, False
        if database is None:
            return
        try:
            database.close()
        except duckdb.Error as exc:  # e.g. an invalidated database: what it committed is in its write-ahead log
            _log.warning("closing %s failed (%s); its write-ahead log is replayed when it is next opened", self.path, exc)


# The files held open, by resolved path; _GUARD makes taking a cursor, giving it back and letting
# the file go one step each, between the steps' thread and the thread that watches for other runs.
_HELD: dict[str, _HeldFile] = {}
_GUARD = threading.RLock()


@contextmanager
def held_open(path: str, others_waiting: Callable[[], bool] | None = None, every_s: float = 0.5) -> Iterator[None]:
    """Keep the warehouse file at ``path`` open in this process for the block.

    Each ``connect()`` block meanwhile gets a cursor of the one open database instead of opening
    the file: the steps of an in-process run skip opening it, reading its catalog and ensuring
    its schema from a cold cache, and DuckDB checkpoints once, when the block ends, instead of at
    every step's end (about 1.5 s of a 10M-session night, ``docs/performance.md``). The file is
    opened by the first connection of the block, with that connection's wait for the write lock,
    so a block in which nothing connects never opens it. A read-only ``connect()`` gets a cursor
    of the read-write database.

    Other processes wait for the file while it is held. So that none waits for the whole block,
    ``others_waiting`` (checked every ``every_s`` seconds on a thread of its own) says whether
    another process wants the file (a run of another process holds or waits for a slot of the
    warehouse's pool: ``zcl_assets.runner``); then the database is closed as soon as no cursor of
    it is in use, between two steps, and the next connection opens the file again, waiting for
    it. Without that, a run of another process that took the pool's slot between two steps would
    wait for the file while this block's next step waited for the slot. A step that starts a
    process that reads the warehouse lets the file go for it (:func:`released`).
    """
    key = str(Path(path).resolve())
    with _GUARD:
        if key in _HELD:  # already held by an enclosing block
            nested = True
        else:
            nested, _HELD[key] = False, _HeldFile(key)
    if nested:
        yield
        return
    stop = threading.Event()
    watcher = threading.Thread(target=_let_go_while_wanted, args=(key, others_waiting, stop, every_s),
                               name="warehouse-hold", daemon=True) if others_waiting else None
    if watcher:
        watcher.start()
    try:
        yield
    finally:
        stop.set()
        if watcher:
            watcher.join()
        with _GUARD:
            _HELD.pop(key).let_go()


def _let_go_while_wanted(key: str, others_waiting: Callable[[], bool], stop: threading.Event, every_s: float) -> None:
    """The watcher of a held file: let it go whenever another process wants it and no cursor is in use."""
    while not stop.wait(every_s):
        try:
            wanted = others_waiting()
        except Exception:  # noqa: BLE001 - the instance could not be read this time: look again next time
            continue
        with _GUARD:
            held = _HELD.get(key)
            if wanted and held is not None and held.cursors == 0 and held.database is not None:
                held.let_go()


@contextmanager
def released(path: str) -> Iterator[None]:
    """Let other processes open the file at ``path`` for the block, within a :func:`held_open`
    block (else nothing changes): the held database is closed (checkpointed), connections made
    meanwhile open the file as outside the hold, and the first one after the block opens it
    again for the hold. For a step that starts a process reading the warehouse (the report's
    page drawer). With a cursor of the held database in use, the file stays held (the other
    process then waits for it)."""
    key = str(Path(path).resolve())
    with _GUARD:
        held = _HELD.get(key)
        if held is None or held.cursors:
            held = None
        else:
            held.let_go()
            del _HELD[key]
    try:
        yield
    finally:
        if held is not None:
            with _GUARD:
                _HELD[key] = held


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection, **frames: object) -> Iterator[duckdb.DuckDBPyConnection]:
    """Register ``frames`` (polars or Arrow tables) under their names and run one transaction.

    Commits when the block ends normally, rolls back when it raises, and unregisters the
    frames either way, so a failed write leaves the previous rows intact.
    """
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    finally:
        for name in frames:
            con.unregister(name)


def matching_rows(table: str, lookup: str, columns: str = "*") -> str:
    """``SELECT {columns} FROM {table}`` of the rows that ``lookup`` selects (the text after
    ``FROM {table} o``: a semi join or a ``WHERE`` over alias ``o``), read in two steps in one statement:
    the row ids of the matches, reading only the columns the lookup names, then those rows whole.

    ``table`` is a base table (not a view) and ``columns`` are its own. Each row comes once, as from a
    semi join: a lookup that joins a row to several others does not repeat it, as the plain join would.

    Joined directly, DuckDB reads every column of every row while it probes. With keys in no order
    (random UUIDs) its min-max indexes skip nothing, and at 10M sessions such a lookup cost 0.5 s
    per table. The second read skips row groups by the matches' row ids: DuckDB filters by the ids
    themselves up to 50 matches (``dynamic_or_filter_threshold``), and by their range beyond. So it
    pays when the matches are few or were appended together, as a night's new rows are; many
    matches spread over the history cost the key columns' read more than the plain join
    (``docs/performance.md``). ``rowid`` is DuckDB's: use this for statements on the warehouse
    connection, not for those an engine may run on Spark.
    """
    return f"SELECT {columns} FROM {table} WHERE rowid IN (SELECT o.rowid FROM {table} o {lookup})"


def tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The inventory: every table and view of the warehouse as ``schema.name`` (``main.`` included)."""
    return {f"{s}.{t}" for s, t in con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall()}


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether table ``name`` (``schema.name``, or a bare name in ``main``) exists."""
    schema, _, bare = name.rpartition(".")
    return bool(con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?", [schema or "main", bare]
    ).fetchone()[0])


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table of the warehouse that is missing (idempotent).

    A warehouse written before the archive layout (it has ``raw_records``) loses its raw,
    staged and manifest tables, which the next run rebuilds from the landing folder;
    frozen plans and past looks are kept.
    """
    if has_table(con, "main.raw_records"):
        for name in _LEGACY_TABLES:
            con.execute(f"DROP TABLE IF EXISTS {name}")
        con.execute("DELETE FROM quarantine WHERE stage IN ('contract', 'landing')")
    for name in SCHEMA_FILES:
        con.execute(load_sql(name))
    for contract in CONTRACTS.values():
        con.execute(staged_ddl(contract))
        con.execute(staged_ddl(contract, held=True))
