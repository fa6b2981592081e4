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


__all__ = ["table_metadata"]
