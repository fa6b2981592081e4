"""Read the ZCL PostgreSQL schema: one consistent snapshot, streamed in Arrow batches.

The driver is the ADBC PostgreSQL driver (``adbc-driver-postgresql``, Apache Arrow): it runs
each query as ``COPY (...) TO STDOUT (FORMAT binary)`` and hands back Arrow record batches
of about 16 MB, so a table of any size passes through in batches and memory holds one UTC
day of rows at a time (:func:`stream_days`).

Every read of one run happens in one ``REPEATABLE READ, READ ONLY`` transaction: the
fingerprints and the rows of all four tables come from the same snapshot, so what lands is
the source's state at one moment, never a mixture of two. Table names are validated
identifiers (``zcl_assets.sources.config``) and quoted; values are bound as parameters.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import resources

import polars as pl

from zcl_assets.sources.config import SourceConfig

TIME_COLUMNS: dict[str, str] = {"sessions": "started_at", "assignments": "assigned_at", "outcomes": "recorded_at"}
"""The event time of each streamed table: its watermark, and the UTC day its rows land in."""
EPOCH = _dt.datetime(1, 1, 1, tzinfo=_dt.timezone.utc)
"""The lower bound of a reconciling read: every row."""
BATCH_BYTES = 16 * 1024 * 1024
"""The size of one Arrow batch the driver hands over (its own default): memory per table read
is one UTC day of rows plus one batch."""


@dataclass(frozen=True)
class DayFingerprint:
    """One UTC day of a table at the source: rows, an order-free digest, latest timestamp."""

    rows: int
    digest: str
    latest: _dt.datetime | None = None

    def same_rows(self, other: object) -> bool:
        return isinstance(other, DayFingerprint) and (self.rows, self.digest) == (other.rows, other.digest)


@cache
def _sql(name: str) -> str:
    return (resources.files(__package__) / "sql" / f"{name}.sql").read_text(encoding="utf-8")


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def table_sql(config: SourceConfig, role: str) -> str:
    """The SELECT of one table role, with the configured (validated, quoted) table names."""
    names = {r: f"{_quote(config.schema)}.{_quote(t)}" for r, t in config.tables.items()}
    return _sql(f"select_{role}").format(**names)


def connect(uri: str):
    """An ADBC connection to ``uri`` (``postgresql://user@host:port/db``).

    Raises:
        ConnectionError: the server cannot be reached or refuses the login; the message names
            host and database, never the password.
    """
    import adbc_driver_postgresql.dbapi as pg

    try:
        return pg.connect(uri)
    except Exception as exc:  # noqa: BLE001 - the driver raises its own error types
        raise ConnectionError(f"cannot connect to PostgreSQL at {redact(uri)}: {_first_line(exc)}") from exc


def redact(uri: str) -> str:
    """``uri`` without its password (``postgresql://reader:***@host/db``)."""
    if "://" not in uri or "@" not in uri:
        return uri
    scheme, rest = uri.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in credentials else ''}@{host}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def snapshot(uri: str) -> Iterator[object]:
    """A cursor in one ``REPEATABLE READ, READ ONLY`` transaction with ``TimeZone`` UTC
    (a row's text, hence its fingerprint, does not depend on the server's zone). Rolled back
    and closed on exit: nothing is written at the source."""
    con = connect(uri)
    try:
        cur = con.cursor()
        try:
            for statement in ("SET TIME ZONE 'UTC'", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"):
                cur.adbc_statement.set_sql_query(statement)
                cur.adbc_statement.execute_update()
            yield cur
        finally:
            cur.close()
            con.rollback()
    finally:
        con.close()


def _date_literal(day: _dt.date) -> str:
    """``YYYY-MM-DD`` of a date object, the only value put in SQL text (digits and dashes)."""
    if isinstance(day, _dt.datetime) or not isinstance(day, _dt.date):
        raise TypeError(f"expected a date, got {day!r}")
    return day.isoformat()


def read_experiments(cur, config: SourceConfig) -> pl.DataFrame:
    """Every row of the experiments table, in id order."""
    cur.execute(table_sql(config, "experiments"))
    return pl.from_arrow(cur.fetch_arrow_table())


def fingerprints(cur, config: SourceConfig, role: str, since: _dt.datetime = EPOCH) -> dict[_dt.date, DayFingerprint]:
    """{UTC day: fingerprint} of one streamed table's rows at or after ``since``."""
    time_column = TIME_COLUMNS[role]
    cur.execute(_sql("fingerprint_days").format(rows=table_sql(config, role), time_column=time_column), parameters=(since,))
    frame = pl.from_arrow(cur.fetch_arrow_table())
    return {day: DayFingerprint(int(n), str(digest), latest) for day, n, digest, latest in frame.iter_rows()}


def stream_days(cur, config: SourceConfig, role: str, days: list[_dt.date],
                batch_bytes: int = BATCH_BYTES) -> Iterator[tuple[_dt.date, pl.DataFrame]]:
    """(UTC day, its rows in source id order) for each of ``days`` that has rows, in day order.

    One query, streamed by the server through COPY; the batches arrive ordered by day, and a
    day is yielded once its last row has arrived, so memory holds one day and one batch,
    whatever the size of the table.
    """
    if not days:
        return
    days = sorted(days)
    query = _sql("select_days").format(rows=table_sql(config, role), time_column=TIME_COLUMNS[role],
                                       start=f"TIMESTAMPTZ '{_date_literal(days[0])} 00:00:00+00'",
                                       days=", ".join(f"DATE '{_date_literal(d)}'" for d in days))
    cur.adbc_statement.set_options(**{"adbc.postgresql.batch_size_hint_bytes": str(int(batch_bytes))})
    cur.execute(query)
    held: list[pl.DataFrame] = []
    for batch in cur.fetch_record_batch():
        frame = pl.from_arrow(batch)
        if frame.height == 0:
            continue
        for part in frame.partition_by("day", maintain_order=True):
            if held and held[0].item(0, "day") != part.item(0, "day"):
                yield held[0].item(0, "day"), pl.concat(held)
                held = []
            held.append(part)
    if held:
        yield held[0].item(0, "day"), pl.concat(held)
