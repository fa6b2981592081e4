"""Dagster metadata built from polars frames: tables with a schema instead of Markdown."""

from __future__ import annotations

import datetime as dt
import math

import dagster as dg
import polars as pl

from zcl_assets.privacy.redaction import redact

MAX_ROWS = 200
"""Rows shown in one table of metadata; a longer frame says how many were left out."""


def _column_type(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    if dtype == pl.Boolean:
        return "bool"
    if dtype.is_temporal():
        return "date"
    return "string"


def _value(value: object) -> object:
    if isinstance(value, str):
        return redact(value)  # a second guard: metadata lands in Dagster's event log
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def table_metadata(frame: pl.DataFrame, description: str = "", max_rows: int = MAX_ROWS) -> dg.TableMetadataValue:
    """``MetadataValue.table`` of ``frame`` with a ``TableSchema`` from its dtypes.

    ``description`` goes to the first column's description (the UI shows it on hover);
    at most ``max_rows`` rows are shown, and when rows are left out the description says
    how many, so a table is never cut silently. Text values are redacted
    (``zcl_assets.privacy.redaction``).
    """
    shown = frame.head(max_rows)
    note = f" (first {max_rows} of {frame.height} rows shown)" if frame.height > max_rows else ""
    columns = [dg.TableColumn(name, _column_type(dtype)) for name, dtype in frame.schema.items()]
    if columns and (description or note):
        columns[0] = dg.TableColumn(columns[0].name, columns[0].type, description=(description + note).strip())
    records = [dg.TableRecord({k: _value(v) for k, v in row.items()}) for row in shown.iter_rows(named=True)]
    return dg.MetadataValue.table(records=records, schema=dg.TableSchema(columns=columns))


DAYS_LISTED = 31
"""Days a run's table of days lists one by one; a longer run (a backfill) lists its months."""


def days_metadata(days: pl.DataFrame, description: str) -> dg.TableMetadataValue:
    """The table of the days a run touched (``partition_day`` as ``YYYY-MM-DD`` text, integer
    counts and text columns), as :func:`table_metadata` gives it, when the run touched at most
    :data:`DAYS_LISTED` days; for more, one row per month: its days, the sums of the counts and
    each value of a text column with its days (columns of other types are left out).

    Dagster gives every partition of a range the run's metadata, so a table of every day cost
    each asset days x days rows in the event log (up to 200 rows a table, ``MAX_ROWS``): the
    first run of the bundled landing (139 days) wrote materializations of 12 KB on average, up
    to 99 KB. By month, a 300-day backfill's table has 10 or 11 rows.
    """
    if days.height <= DAYS_LISTED:
        return table_metadata(days, description)
    days = days.with_columns(pl.col("partition_day").str.slice(0, 7).alias("month"))
    counts = [name for name, dtype in days.schema.items() if dtype.is_integer()]
    texts = [name for name, dtype in days.schema.items() if dtype == pl.String and name not in ("partition_day", "month")]
    months = days.group_by("month").agg(pl.len().alias("days"), *(pl.col(c).sum() for c in counts))
    for column in texts:  # each value with its days: "changed 1, new 14"
        kinds = (days.group_by("month", column).len()
                 .group_by("month").agg(pl.format("{} {}", pl.col(column), pl.col("len")).sort().str.join(", ").alias(column)))
        months = months.join(kinds, on="month", how="left")
    return table_metadata(months.sort("month"), f"{description}, by month ({days.height} days)")


__all__ = ["days_metadata", "table_metadata"]
