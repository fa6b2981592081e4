"""Dagster metadata of the funnel and gain assets: tables with a schema, text charts."""

from __future__ import annotations

import math

import dagster as dg
import polars as pl

_TYPES = {pl.String: "string", pl.Int64: "int", pl.Int32: "int", pl.Float64: "float", pl.Boolean: "bool", pl.Date: "date"}


def _value(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def table(frame: pl.DataFrame, descriptions: dict[str, str] | None = None) -> dg.MetadataValue:
    """``frame`` as ``MetadataValue.table`` with a ``TableSchema`` derived from its dtypes."""
    descriptions = descriptions or {}
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn(name, _TYPES.get(dtype, "string"), description=descriptions.get(name))
            for name, dtype in frame.schema.items()
        ]
    )
    records = [dg.TableRecord({k: _value(v) for k, v in row.items()}) for row in frame.iter_rows(named=True)]
    return dg.MetadataValue.table(records=records, schema=schema)


def chart(text: str) -> dg.MetadataValue:
    """A text chart shown in a fixed-width block (fenced so that no text inside it can close the block)."""
    from zcl_assets.reports.markdown import code_block

    return dg.MetadataValue.md(code_block(text or "(no data)"))
