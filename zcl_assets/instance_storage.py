"""Dagster's SQLite instance storage, with an engine kept per database and the connections to the
run index kept open.

Dagster's SQLite storages (runs, event logs, schedules) build a new SQLAlchemy engine, and open
and close a new SQLite connection, for every query. SQLAlchemy caches compiled statements per
engine, and closing a database's last connection checkpoints its write-ahead log, so storing one
event compiled its ``INSERT`` statements again and checkpointed twice: once its run's database,
once the index of all runs (``history/runs/index.db``, where every asset event is copied). A
night records one event per experiment page, 1,000 a night at 1,000 experiments.

:class:`SqliteStorage` keeps Dagster's files and layout in the instance folder, its schema, its
queries, its locks and its transactions. It keeps one engine per database, and one open
connection to the two databases every event or run writes, ``runs.db`` and ``index.db`` (more
are opened and closed when threads ask at once). A run's own database and ``schedules.db`` are
still opened and closed per query, as Dagster does:

- the UI follows a running run's log by watching its database file, which changes only when
  its last connection closes and checkpoints the write-ahead log into it;
- ``DagsterInstance.dispose`` does not dispose the schedule storage, so an open connection
  there would outlive the instance.

An asset materialization is written twice: into the run's log and, as the asset's latest, into
the index's entry of its asset, where Dagster serializes the whole event again (its metadata, a
page's tables and plots, is most of an event's cost). The entry is built around the text just
written to the log instead, the same text Dagster would write.

Dagster sends some events in batches (``DAGSTER_EVENT_BATCH_SIZE``, off by default): the planned
materializations and checks of a run, and a step's materializations of a range of partitions,
one event per asset and day (1,946 of each in the first run of the bundled landing, 139 days);
the night's report sends its experiment pages in batches too (``zcl_assets.defs.reports.assets``).
The project's instance turns batches on and stores each in one transaction per database, all
or nothing (:meth:`SqliteEventLogStorage.store_event_batch`), where Dagster's storage opened,
committed and checkpointed a run's database and committed the index for every event, 6 to
11 ms each. A batch is stored when its last event comes: a step stopped while Dagster yields
a range's materializations stores none of them (one by one, it stored those before the stop).

``wipe`` and ``dispose`` close the kept connections first. While a process has the instance
open, the latest runs and events can sit in ``runs.db-wal`` and ``index.db-wal``: a copy of the
folder must take those files too (or use SQLite's ``.backup``). An instance folder written by
Dagster's own SQLite storage reads the same with this one, and the other way round.

The project's ``dagster_home/dagster.yaml`` selects it through :class:`ProjectInstance`
(``instance_class``), so that, as with Dagster's default storage, it stores in the folder the
instance is opened from (``DAGSTER_HOME``, or ``DagsterInstance.from_config(folder)``).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import yaml
from dagster import DagsterInstance
from dagster._core.events import ASSET_CHECK_EVENTS, BATCH_WRITABLE_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.base_storage import DagsterStorage
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage as _EventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage as _RunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage as _ScheduleStorage
from dagster._core.storage.sqlalchemy_compat import db_result
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage as _Storage
from dagster._core.storage.sqlite_storage import _event_logs_directory, _runs_directory, _schedule_directory
from dagster._serdes import ConfigurableClassData
from dagster._time import datetime_from_timestamp
from dagster._utils import mkdir_p
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool, QueuePool

ENGINES_KEPT = 16
"""Run databases whose engine the event log keeps at most, the least recently used dropped first:
there is one database per run, and the UI reads many runs."""


class Engines:
    """One engine per connection string, the ``kept`` most recently used. With ``keep_open``, each
    keeps one connection open (``pool_size=1``) and opens more, closed after use, for threads
    that ask at once; without, a connection is opened and closed per use (Dagster's ``NullPool``)."""

    def __init__(self, kept: int, keep_open: bool, **connect_args: object):
        self._kept = kept
        self._pool = {"poolclass": QueuePool, "pool_size": 1, "max_overflow": -1} if keep_open else {"poolclass": NullPool}
        self._connect_args = connect_args
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, conn_string: str) -> Engine:
        with self._lock:
            engine = self._engines.pop(conn_string, None)
            if engine is None:
                engine = create_engine(conn_string, connect_args=self._connect_args, **self._pool)
            self._engines[conn_string] = engine
            while len(self._engines) > self._kept:
                self._engines.popitem(last=False)[1].dispose()
            return engine

    def close(self) -> None:
        """Close every kept connection (the engines open new ones when next asked)."""
        with self._lock:
            while self._engines:
                self._engines.popitem()[1].dispose()


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn, conn.begin():
        yield conn


class _OneDatabase:
    """A storage over one database (``self._conn_string``) and its engine (:attr:`KEEP_OPEN`: its connection)."""

    KEEP_OPEN = True

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        self._engines = Engines(kept=1, keep_open=self.KEEP_OPEN)
        super().__init__(conn_string, inst_data)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with _transaction(self._engines.get(self._conn_string)) as conn:
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engines.close()


class SqliteRunStorage(_OneDatabase, _RunStorage):
    """Dagster's run storage over ``runs.db``, its connection kept open."""


class SqliteScheduleStorage(_OneDatabase, _ScheduleStorage):
    """Dagster's schedule and sensor storage over ``schedules.db``, a connection per query (module doc)."""

    KEEP_OPEN = False


class SqliteEventLogStorage(_EventLogStorage):
    """Dagster's event log over one database per run (a connection per query, module doc) and the
    index of all runs (its connection kept open)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):  # noqa: D107
        self._index = Engines(kept=1, keep_open=True, timeout=SQLITE_BUSY_TIMEOUT_SECONDS)
        self._runs = Engines(kept=ENGINES_KEPT, keep_open=False, timeout=SQLITE_BUSY_TIMEOUT_SECONDS)
        self._serialized: tuple[EventLogEntry | None, str] = (None, "")  # the last event serialized, and its text
        self._batch = threading.local()  # .index: the index connection of the batch this thread stores
        super().__init__(base_dir, inst_data)

    def _engine(self, shard: str) -> Engine:
        return (self._index if shard == INDEX_SHARD_NAME else self._runs).get(self.conn_string_for_shard(shard))

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        batch = getattr(self._batch, "index", None) if shard == INDEX_SHARD_NAME else None
        if batch is not None:  # Dagster's writes of an event of the batch join its transaction
            yield batch
            return
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:  # a run's database is created on its first event
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with _transaction(engine) as conn:
                yield conn

    def _event_to_row(self, event: EventLogEntry) -> dict[str, Any]:
        row = super()._event_to_row(event)
        self._serialized = (event, row["event"])
        return row

    def _get_asset_entry_values(self, event: EventLogEntry, event_id: int, has_asset_key_index_cols: bool) -> dict[str, Any]:
        """Dagster's values of an asset's index entry, whose ``last_materialization`` (the event
        as an ``EventLogRecord``) is built around the event's text just written to the log instead
        of serializing the event a second time; another event (a batch, or another thread's) is
        serialized by Dagster."""
        last, text = self._serialized
        if event is not last or not event.get_dagster_event().is_step_materialization:
            return super()._get_asset_entry_values(event, event_id, has_asset_key_index_cols)
        values: dict[str, Any] = {"last_materialization": event_record_json(text, event_id), "last_run_id": event.run_id}
        if has_asset_key_index_cols:
            values["last_materialization_timestamp"] = datetime_from_timestamp(event.timestamp)
        return values

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store a batch as :meth:`store_event` stores each event, in one transaction per database:
        the run's log, then the index (the events' copies, the asset events' tags and their
        assets' entries, the planned checks' executions).

        Dagster sends a batch (the :class:`ProjectInstance`'s ``EVENT_BATCH_SIZE``) for the planned
        materializations and checks of a run, a step's materializations of a range of
        partitions, one event per asset and day, and the report's pages; a connection opened and committed per event
        cost 6 to 11 ms each. When this method raises, Dagster stores every event of the batch
        again, one by one; so it stores all or nothing: if the index's transaction fails, the
        rows just committed to the run's log are deleted before the error is raised.
        """
        if len({event.run_id for event in events}) != 1 or any(
                e.dagster_event_type not in BATCH_WRITABLE_EVENTS for e in events):  # Dagster sends neither
            super().store_event_batch(events)
            return
        rows = [self._event_to_row(event) for event in events]
        with self.run_connection(events[0].run_id) as conn:
            logged = [self._insert(conn, row) for row in rows]
        try:
            with self.index_transaction() as conn:
                self._batch.index = conn
                try:
                    self._index_batch(conn, events, rows)
                finally:
                    self._batch.index = None
        except Exception:
            with self.run_connection(events[0].run_id) as conn:
                conn.execute(SqlEventLogStorageTable.delete().where(SqlEventLogStorageTable.c.id.in_(logged)))
            raise

    def _index_batch(self, conn: Connection, events: Sequence[EventLogEntry], rows: Sequence[dict[str, Any]]) -> None:
        """The index's part of :meth:`store_event`, for every event of a batch, on one connection."""
        assets, ids = [], []
        for event, row in zip(events, rows):
            event_id = self._insert(conn, row)
            if event.dagster_event_type in ASSET_CHECK_EVENTS:
                self.store_asset_check_event(event, event_id)  # its writes join the batch's transaction
            elif event.get_dagster_event().asset_key:
                assets.append((event, row["event"]))
                ids.append(event_id)
        self._store_asset_event_tags(conn, [event for event, _ in assets], ids)
        for (event, text), event_id in zip(assets, ids):
            self._serialized = (event, text)  # the entry reuses the text just written
            self._store_asset_event(conn, event, event_id)

    @staticmethod
    def _insert(conn: Connection, row: dict[str, Any]) -> int:
        with db_result(conn, SqlEventLogStorageTable.insert().values(**row)) as result:
            return result.inserted_primary_key[0]

    def has_table(self, table_name: str) -> bool:
        engine = self._engine(INDEX_SHARD_NAME)
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    def wipe(self) -> None:
        self._index.close()  # before the databases are deleted or emptied under their connections
        self._runs.close()
        super().wipe()

    def dispose(self) -> None:
        super().dispose()
        self._index.close()
        self._runs.close()


def event_record_json(event_json: str, storage_id: int) -> str:
    """Dagster's serialization of ``EventLogRecord(storage_id, event_log_entry)``, given the
    serialization of the entry (Dagster writes the record's fields in this order)."""
    return f'{{"__class__": "EventLogRecord", "event_log_entry": {event_json}, "storage_id": {int(storage_id)}}}'


class SqliteStorage(_Storage):
    """Dagster's SQLite storage (``storage: sqlite``, same files under ``base_dir``) over the storages above."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):  # noqa: D107
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = SqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        DagsterStorage.__init__(self)

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: dict) -> SqliteStorage:
        mkdir_p(config_value["base_dir"])
        return cls(inst_data=inst_data, **config_value)


class ProjectInstance(DagsterInstance):
    """Dagster's instance, whose storage by default is :class:`SqliteStorage` in the instance folder
    (Dagster's default is its own SQLite storage there); a ``storage`` key in ``dagster.yaml`` still wins."""

    EVENT_BATCH_SIZE = 1000
    """Events of one batch stored at once (:meth:`SqliteEventLogStorage.store_event_batch`); Dagster's
    ``DAGSTER_EVENT_BATCH_SIZE``, when set, wins (``0``: every event on its own, Dagster's default)."""

    @classmethod
    def config_schema(cls) -> dict:
        return {}

    def _get_event_batch_size(self) -> int:
        return int(os.getenv("DAGSTER_EVENT_BATCH_SIZE", str(self.EVENT_BATCH_SIZE)))

    @staticmethod
    def config_defaults(base_dir: str) -> dict[str, ConfigurableClassData | None]:
        storage = ConfigurableClassData(__name__, SqliteStorage.__name__, yaml.dump({"base_dir": base_dir}))
        return {**InstanceRef.config_defaults(base_dir), "storage": storage}
