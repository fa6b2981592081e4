"""Write landing records split into daily partitions (docs/landing.md), as Parquet or JSON Lines.

One call writes one table's records, taken from a polars DataFrame, as

    <landing_dir>/<table>/<YYYY-MM-DD>/<name>.parquet   (or .jsonl)

where the date is the UTC day of the table's event-time column. The file name is chosen by
the caller and is deterministic (derived from the source, never from the clock), so
re-importing the same source replaces its files instead of adding duplicates, and a day the
source no longer covers loses its file.

Parquet (what the importers write): columns keep their polars types; ``Datetime`` columns are
stored in UTC (a naive datetime is UTC by contract); a ``String`` column is stored verbatim, so
an importer keeps the raw text of values it could not parse and the contract quarantines them;
columns named in ``json_columns`` hold JSON text; NaN stays NaN (the contract refuses it).

JSON Lines (for people and tests who land text): one JSON object per line, UTF-8, keys in
column order:

* every record carries ``schema_version`` (added as the first key when absent);
* ``Datetime`` columns are written as ISO 8601 with ``+00:00``; a ``String`` column is
  written verbatim as a JSON string;
* ``List``/``Struct`` columns are written as JSON values; columns named in ``json_columns``
  hold JSON *text* that is embedded as a JSON value (null stays null);
* a null is written as ``null``; NaN and infinities become ``null`` (JSON has none).
"""

from __future__ import annotations

import datetime as _dt
import filecmp
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

SCHEMA_VERSION = 1

_TS_FORMATS_WITH_OFFSET = (
    "%Y-%m-%dT%H:%M:%S%.f%:z",
    "%Y-%m-%d %H:%M:%S%.f%:z",
    "%Y-%m-%dT%H:%M:%S%.f%z",
    "%Y-%m-%d %H:%M:%S%.f%z",
)
_TS_FORMATS_NAIVE = (
    "%Y-%m-%dT%H:%M:%S%.fZ",
    "%Y-%m-%d %H:%M:%S%.fZ",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M",
)
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.f+00:00"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class LandingWrite:
    """What one :func:`write_landing` call wrote."""

    table: str
    files: list[Path] = field(default_factory=list)
    rows_per_file: dict[Path, int] = field(default_factory=dict)
    removed_stale: list[Path] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.rows_per_file.values())

    @property
    def rows_per_day(self) -> dict[str, int]:
        return {p.parent.name: n for p, n in self.rows_per_file.items()}


def safe_name(text: str) -> str:
    """A file-name-safe version of ``text`` (runs of other characters become ``_``)."""
    out = _SAFE_NAME.sub("_", str(text)).strip("._")
    return out or "unnamed"


def parse_timestamp(expr: pl.Expr | str) -> pl.Expr:
    """Parse timestamp text to ``Datetime[us, UTC]``; null where the text cannot be parsed.

    Accepts ISO 8601 with ``T`` or a space, optional fractional seconds, an offset
    (``+02:00``, ``+0200``), ``Z``, or no offset (naive text is UTC by contract), and a bare
    date (midnight UTC).
    """
    e = pl.col(expr) if isinstance(expr, str) else expr
    e = e.cast(pl.String).str.strip_chars()
    parts: list[pl.Expr] = []
    for fmt in _TS_FORMATS_WITH_OFFSET:
        parts.append(
            e.str.to_datetime(fmt, strict=False, time_unit="us").dt.convert_time_zone("UTC")
        )
    for fmt in _TS_FORMATS_NAIVE:
        parts.append(
            e.str.to_datetime(fmt, strict=False, time_unit="us").dt.replace_time_zone("UTC")
        )
    parts.append(
        e.str.to_date("%Y-%m-%d", strict=False)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
    )
    return pl.coalesce(parts)


def parse_timestamps(text: pl.Series) -> pl.Series:
    """Timestamp text to ``Datetime[us, UTC]``, as :func:`parse_timestamp`, in fewer passes.

    The format polars infers from the data parses the bulk in one pass; only the values it
    leaves null are tried against every accepted format (an export rarely mixes formats).
    """
    text = text.cast(pl.String)
    try:
        parsed = text.str.to_datetime(strict=False, time_unit="us", time_zone="UTC")
    except (pl.exceptions.ComputeError, pl.exceptions.InvalidOperationError):
        parsed = pl.Series(text.name, [None] * len(text), dtype=pl.Datetime("us", "UTC"))
    missing = parsed.is_null() & text.is_not_null()
    if missing.any():  # padded text too: parse_timestamp strips it
        retry = pl.DataFrame({"t": text.filter(missing)}).select(parse_timestamp("t")).to_series()
        parsed = parsed.scatter(missing.arg_true(), retry)
    return parsed.alias(text.name)


def _as_utc(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is None:
            return expr.dt.cast_time_unit("us").dt.replace_time_zone("UTC")
        return expr.dt.cast_time_unit("us").dt.convert_time_zone("UTC")
    if isinstance(dtype, pl.Date):
        return expr.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return parse_timestamp(expr)


def iso_utc(expr: pl.Expr) -> pl.Expr:
    """Format a ``Datetime`` expression as ISO 8601 text with ``+00:00`` (naive = UTC).

    Fractional seconds are written only when present (3, 6 digits as needed).
    """
    return (
        expr.dt.cast_time_unit("us")
        .dt.replace_time_zone(None)
        .dt.strftime(_ISO_FORMAT)
    )


def timestamp_text(expr: pl.Expr) -> pl.Expr:
    """Normalize timestamp text: ISO 8601 ``+00:00`` where parseable, else the raw text."""
    raw = expr.cast(pl.String)
    return pl.coalesce(iso_utc(parse_timestamp(raw)), raw)


def json_text(expr: pl.Expr) -> pl.Expr:
    """JSON text of each value of a scalar or nested expression (null -> ``null``)."""
    encoded = pl.struct(expr.alias("v")).struct.json_encode()
    return encoded.str.strip_prefix('{"v":').str.strip_suffix("}")


def _encode_lines(df: pl.DataFrame, json_columns: set[str]) -> pl.Series:
    parts: list[pl.Expr] = []
    for name, dtype in df.schema.items():
        key = json_text(pl.lit(name))  # JSON-quoted key
        col = pl.col(name)
        if name in json_columns:
            value = pl.coalesce(col.cast(pl.String), pl.lit("null"))
        elif isinstance(dtype, (pl.Datetime, pl.Date)):
            value = json_text(iso_utc(_as_utc(col, dtype)))
        elif isinstance(dtype, (pl.Float32, pl.Float64)):
            value = json_text(pl.when(col.is_finite()).then(col).otherwise(None))
        else:
            value = json_text(col)
        parts.append(pl.concat_str([key, pl.lit(":"), value]))
    line = pl.concat_str(
        [pl.lit("{"), pl.concat_str(parts, separator=","), pl.lit("}")]
    )
    return df.select(line.alias("line")).to_series()


FORMATS: tuple[str, ...] = ("parquet", "jsonl")


def write_landing(
    records: pl.DataFrame,
    landing_dir: str | os.PathLike[str],
    table: str,
    *,
    time_column: str,
    name: str,
    json_columns: Iterable[str] = (),
    fallback_day: str | _dt.date | None = None,
    remove_stale: bool = True,
    extra_lines: Mapping[str, Sequence[str]] | None = None,
    fmt: str = "jsonl",
) -> LandingWrite:
    """Write ``records`` of one landing ``table`` split by UTC day.

    Options:

    * ``time_column``: the event-time column that picks the daily partition (``registered_at``
      for experiments, ``started_at`` for sessions, ...). ``Datetime`` or timestamp text.
    * ``name``: file stem, made file-name safe; must be deterministic for the source so a
      re-import replaces (``<name>.<fmt>`` in every day folder).
    * ``json_columns`` (default none): ``String`` columns holding JSON text (nested fields
      such as ``arms`` whose payloads differ in shape).
    * ``fallback_day`` (default: the earliest parseable day in ``records``, else 1970-01-01):
      partition for rows whose event time cannot be parsed; they are still written, raw, so
      contract validation quarantines them instead of the row being lost.
    * every record carries ``schema_version`` (:data:`SCHEMA_VERSION`, the current landing schema), added when absent.
    * ``remove_stale`` (default True): delete this stem's files of this table (any format) in
      day folders this call did not write, so re-importing a changed source replaces its
      earlier import instead of leaving stale rows behind.
    * ``extra_lines`` (JSON Lines only; default none): raw text lines appended, verbatim, to
      the file of a day (``{"YYYY-MM-DD": [line, ...]}``), e.g. deliberately malformed records.
    * ``fmt``: ``"jsonl"`` (default) or ``"parquet"``.

    Rows keep their input order within each file. Each file is written to a temporary name
    and renamed into place, so a reader never sees half a file; a file identical to the one
    already landed is left untouched, so re-importing the same source changes no landed day.

    Raises:
        ValueError: unknown format, a missing event-time column, or ``extra_lines`` with Parquet.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {FORMATS}")
    if extra_lines and fmt != "jsonl":
        raise ValueError("extra_lines can only be written to JSON Lines")
    landing = Path(landing_dir)
    stem = safe_name(name)
    json_cols = set(json_columns)
    if time_column not in records.columns:
        raise ValueError(f"{table}: event-time column {time_column!r} missing")
    df = records
    if "schema_version" not in df.columns:
        df = df.select(pl.lit(SCHEMA_VERSION, dtype=pl.Int64).alias("schema_version"), pl.all())

    day_expr = _as_utc(pl.col(time_column), df.schema[time_column]).dt.date()
    days = df.select(day_expr.alias("d")).to_series()
    if fallback_day is None:
        first = days.min()
        fallback_day = first if first is not None else _dt.date(1970, 1, 1)
    elif isinstance(fallback_day, str):
        fallback_day = _dt.date.fromisoformat(fallback_day)
    days = days.fill_null(fallback_day)

    if fmt == "jsonl":
        frame = pl.DataFrame({"line": _encode_lines(df, json_cols)})
    else:
        frame = _as_utc_columns(df)
    result = LandingWrite(table=table)
    written: set[Path] = set()
    for day, part in _split_by_day(frame, days):
        folder = landing / table / str(day)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stem}.{fmt}"
        tmp = folder / f".{stem}.{fmt}.tmp"
        if fmt == "jsonl":
            text = "\n".join([*part["line"].to_list(), *(extra_lines or {}).get(str(day), [])]) + "\n"
            tmp.write_bytes(text.encode("utf-8"))
        else:
            part.write_parquet(tmp, compression="lz4")
        # An identical file is left untouched (same bytes, same modification time), so
        # re-importing the same source changes no landed day.
        if path.exists() and filecmp.cmp(tmp, path, shallow=False):
            tmp.unlink()
        else:
            os.replace(tmp, path)
        written.add(path)
        result.files.append(path)
        result.rows_per_file[path] = part.height
    result.files.sort()
    if remove_stale and (landing / table).is_dir():
        for suffix in FORMATS:
            for old in sorted((landing / table).glob(f"*/{stem}.{suffix}")):
                if old not in written:
                    old.unlink()
                    result.removed_stale.append(old)
    return result


def _split_by_day(frame: pl.DataFrame, days: pl.Series) -> list[tuple[str, pl.DataFrame]]:
    """``(YYYY-MM-DD, rows of that day)`` per day of ``days`` (a ``Date`` series without
    nulls, one per row of ``frame``), in day order, rows in input order.

    One stable sort by day (skipped when the rows are already in day order, as the importers
    give them) and zero-copy slices: a hash group-by would gather every column again for each
    table written.
    """
    if not days.is_sorted():
        frame = frame.with_columns(days.alias("__day")).sort("__day", maintain_order=True)
        days = frame.get_column("__day")
        frame = frame.drop("__day")
    runs = days.rle()
    parts, start = [], 0
    for day, n in zip(runs.struct.field("value").to_list(), runs.struct.field("len").to_list(), strict=True):
        parts.append((day.isoformat(), frame.slice(start, n)))
        start += n
    return parts


def _as_utc_columns(df: pl.DataFrame) -> pl.DataFrame:
    """Datetime columns in UTC (naive = UTC by contract) for a typed (Parquet) file."""
    return df.with_columns(
        _as_utc(pl.col(c), t).alias(c) for c, t in df.schema.items() if isinstance(t, pl.Datetime)
    )


def read_source(path: str | os.PathLike[str], *, string_columns: Sequence[str] | None = None,
                all_text: bool = False) -> pl.DataFrame:
    """Read a CSV or Parquet source file.

    ``all_text`` reads every CSV column as text (raw values kept for the contract to judge);
    ``string_columns`` forces only those columns to text.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        df = pl.read_parquet(p)
        if all_text:
            df = df.with_columns(
                [
                    (iso_utc(_as_utc(pl.col(c), t)) if isinstance(t, (pl.Datetime, pl.Date))
                     else pl.col(c).cast(pl.String))
                    for c, t in df.schema.items()
                ]
            )
        elif string_columns:
            df = df.with_columns([pl.col(c).cast(pl.String) for c in string_columns if c in df.columns])
        return df
    if all_text:
        return pl.read_csv(p, infer_schema=False)
    overrides = {c: pl.String for c in (string_columns or ())}
    return pl.read_csv(p, schema_overrides=overrides, infer_schema_length=None)
