"""A staged lifecycle ledger in an in-memory DuckDB, for tests of the funnel build."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import duckdb
import polars as pl

from zcl_assets.warehouse import ensure_schema

T0 = dt.datetime(2026, 9, 1, tzinfo=dt.UTC)


def ledger(events: Iterable[dict]) -> duckdb.DuckDBPyConnection:
    """A connection holding ``quarantine`` and ``staged_admission_events`` with ``events``.

    Each event needs admission_id and state; ``minute`` (offset from 2026-09-01 00:00 UTC),
    org_id (default o1), task_type (t1), arm, session_id, outcome, source_file (f.jsonl) are
    optional; source_row is the position in ``events``.
    """
    rows = []
    for i, e in enumerate(events, start=1):
        at = T0 + dt.timedelta(minutes=e.get("minute", i))
        rows.append({
            "partition_day": at.date(), "source_file": e.get("source_file", "f.jsonl"), "source_row": i,
            "schema_version": 1, "admission_id": e["admission_id"], "org_id": e.get("org_id", "o1"),
            "task_type": e.get("task_type", "t1"), "state": e["state"], "at": at, "arm": e.get("arm"),
            "session_id": e.get("session_id"), "outcome": e.get("outcome"),
        })
    frame = pl.DataFrame(rows, schema={
        "partition_day": pl.Date, "source_file": pl.String, "source_row": pl.Int64, "schema_version": pl.Int64,
        "admission_id": pl.String, "org_id": pl.String, "task_type": pl.String, "state": pl.String,
        "at": pl.Datetime("us", "UTC"), "arm": pl.String, "session_id": pl.String, "outcome": pl.String,
    })
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    ensure_schema(con)  # staged tables, quarantine and the change log
    con.register("ledger_batch", frame)
    con.execute("INSERT INTO staged_admission_events BY NAME SELECT * FROM ledger_batch")
    con.unregister("ledger_batch")
    return con
