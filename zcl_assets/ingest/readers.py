"""Read archived landed files as relations of the three source shapes of ``contracts.validate``.

- JSON Lines (``.jsonl``, ``.ndjson``, ``.json``): one row per non-blank line, numbered by
  its physical line (1-based), as text (``json`` shape). A line that is not valid UTF-8 is
  kept with its bad bytes escaped (``\\xNN``) and flagged ``invalid_encoding``; a line whose
  JSON strings escape half of a UTF-16 surrogate pair without the other half (``"\\ud800"``:
  no Unicode character, so no UTF-8 text can hold it) is kept as landed and flagged
  ``unpaired_surrogate``, so no later step decodes it.
- CSV: every cell as text, one row per data row (1 = the first row after the header;
  blank lines are skipped) (``text`` shape). Files are stacked by column name; a column a
  file lacks is absent. A line with fewer or more cells than the header is a row of its
  own, flagged ``malformed_record`` with the counts, and the other lines are read as usual.
- Parquet: typed columns as stored (``native`` shape), row numbers from the file.

Every row carries ``__error_rule`` and ``__error`` (NULL for a sound row): a file whose
header or schema names a column twice flags every row ``duplicate_field``.

A file that cannot be read at all is one row of the ``json`` shape with the error, so it is
counted and quarantined (``unreadable_file``) instead of lost. :func:`count_rows` counts
with the same readers, so the raw counts and the staged + quarantined rows agree by
construction of the same parser, and disagree only when a later step loses a row; a file
that can be counted but not staged is quarantined whole with as many rows
(:func:`unreadable`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from contracts.schema import sql_literal
from zcl_assets.privacy.redaction import SURROGATE

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet",)

_JSON_SCHEMA = {
    "__partition_day": pl.Date,
    "__source_file": pl.String,
    "__source_row": pl.Int64,
    "__record": pl.String,
    "__error_rule": pl.String,
    "__error": pl.String,
}


@dataclass(frozen=True)
class ArchivedFile:
    """One landed file as archived: its table day, its landed name and its archive path."""

    partition_day: str
    source_file: str
    path: Path

    @property
    def suffix(self) -> str:
        return Path(self.source_file).suffix.lower()


ARROW_BATCH_ROWS = 65_536
"""Rows per record batch when a frame is handed to DuckDB: DuckDB scans batches in parallel."""


def as_batches(frame: pl.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table of ``ARROW_BATCH_ROWS``-row record batches, for DuckDB."""
    table = frame.to_arrow()
    return pa.Table.from_batches(table.to_batches(max_chunksize=ARROW_BATCH_ROWS), schema=table.schema) if frame.height else table


def _lineage(frame: pl.DataFrame, file: ArchivedFile) -> pl.DataFrame:
    return frame.with_columns(
        pl.lit(dt.date.fromisoformat(file.partition_day)).alias("__partition_day"),
        pl.lit(file.source_file).alias("__source_file"),
    )


def unreadable(file: ArchivedFile, error: str, rows: int = 1) -> pl.DataFrame:
    """The ``json``-shape rows that stand for a file that cannot be read (or staged): one, or
    ``rows`` (as many as :func:`count_rows` counted), numbered from 1."""
    return pl.DataFrame(
        {"__partition_day": [dt.date.fromisoformat(file.partition_day)] * rows, "__source_file": [file.source_file] * rows,
         "__source_row": list(range(1, rows + 1)), "__record": [None] * rows,
         "__error_rule": ["unreadable_file"] * rows, "__error": [f"unreadable file: {error}"] * rows},
        schema=_JSON_SCHEMA,
    )


def read_json_lines(file: ArchivedFile) -> pl.DataFrame:
    """Non-blank lines of a JSON Lines file as a ``json``-shape frame.

    A fast path reads the lines with polars; a file it refuses (bytes that are not UTF-8,
    control characters) is read line by line in Python, so every line is kept.
    """
    try:
        with file.path.open("rb") as handle:  # a handle, not a path: polars reads a path as a glob (a[1].jsonl)
            frame = pl.read_csv(
                handle, has_header=False, separator="\x01", quote_char=None, new_columns=["__record"],
                schema={"__record": pl.String}, row_index_name="__source_row", row_index_offset=1,
            )
        frame = frame.with_columns(pl.col("__source_row").cast(pl.Int64), pl.lit(None, dtype=pl.String).alias("__error_rule"),
                                   pl.lit(None, dtype=pl.String).alias("__error"))
    except Exception:  # noqa: BLE001 - the exact reader below handles what polars refuses
        try:
            frame = _read_lines_exactly(file.path)
        except OSError as exc:
            return unreadable(file, f"{type(exc).__name__}: {exc}")
    frame = frame.filter(pl.col("__record").is_not_null() & (pl.col("__record").str.strip_chars() != ""))
    return _lineage(flag_unpaired_surrogates(frame), file).select(list(_JSON_SCHEMA))


def _read_lines_exactly(path: Path) -> pl.DataFrame:
    rows, records, encoding = [], [], []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        raw = raw.rstrip(b"\r")
        try:
            text, bad = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, bad = raw.decode("utf-8", errors="backslashreplace"), True
        rows.append(number)
        records.append(text)
        encoding.append(bad)
    return pl.DataFrame(
        {
            "__source_row": rows,
            "__record": records,
            "__error_rule": ["invalid_encoding" if bad else None for bad in encoding],
            "__error": ["line is not valid UTF-8" if bad else None for bad in encoding],
        },
        schema={"__source_row": pl.Int64, "__record": pl.String, "__error_rule": pl.String, "__error": pl.String},
    )


_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"
"""A JSON escape of a UTF-16 surrogate (``\\ud800`` to ``\\udfff``), paired or not: the cheap
test that picks the few lines :func:`unpaired_surrogates` reads exactly."""



def unpaired_surrogates(line: str) -> str | None:
    r"""Why a JSON Lines line cannot become text, or None: a string of it (a key or a value)
    escapes half of a UTF-16 surrogate pair without the other half (RFC 8259 section 8.2).

    Python's ``json`` decodes such an escape to a lone surrogate, which no UTF-8 text can
    hold (DuckDB refuses the line as JSON); a paired escape (``\ud83d\ude00``) is one
    character and passes. A line that is not JSON is left to ``malformed_record``.

    Examples:
        >>> unpaired_surrogates('{"session_id": "s\\ud800", "model": "m"}')
        '"session_id" holds \\ud800, half of a UTF-16 surrogate pair without its other half, which is no Unicode character'
        >>> unpaired_surrogates('{"note": "\\ud83d\\ude00"}') is None
        True
    """
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return None
    pairs = parsed.items() if isinstance(parsed, dict) else [(None, parsed)]
    for key, value in pairs:
        found = SURROGATE.findall(json.dumps(value, ensure_ascii=False) + (key or ""))
        if found:
            where = "the line" if key is None else json.dumps(key)
            escapes = ", ".join(dict.fromkeys(f"\\u{ord(c):04x}" for c in found))
            return f"{where} holds {escapes}, half of a UTF-16 surrogate pair without its other half, which is no Unicode character"
    return None


def flag_unpaired_surrogates(frame: pl.DataFrame) -> pl.DataFrame:
    """A ``json``-shape frame with its sound lines that hold an unpaired surrogate flagged
    ``unpaired_surrogate`` (:func:`unpaired_surrogates`); only lines that escape a surrogate
    at all are parsed."""
    suspect = frame.get_column("__record").str.contains(_SURROGATE_ESCAPE) & frame.get_column("__error_rule").is_null()
    if not suspect.any():
        return frame
    reasons = [unpaired_surrogates(line) if s else None for line, s in zip(frame.get_column("__record"), suspect)]
    found = pl.Series(reasons, dtype=pl.String)
    return frame.with_columns(
        pl.when(found.is_not_null()).then(pl.lit("unpaired_surrogate")).otherwise(pl.col("__error_rule")).alias("__error_rule"),
        pl.when(found.is_not_null()).then(found).otherwise(pl.col("__error")).alias("__error"),
    )


def _flag(frame: pl.DataFrame, rule: str | None, reason: str | None) -> pl.DataFrame:
    """``frame`` with ``__error_rule`` and ``__error`` set on every row (None: a sound file)."""
    return frame.with_columns(pl.lit(rule, dtype=pl.String).alias("__error_rule"), pl.lit(reason, dtype=pl.String).alias("__error"))


def _unique_names(names: list[str]) -> tuple[list[str], str | None]:
    """Names made unique (a repeat gets ``__2``, ``__3``...) and the reason when one repeated."""
    counts = Counter(names)
    repeated = sorted(n for n, c in counts.items() if c > 1)
    seen: Counter[str] = Counter()
    unique = []
    for name in names:
        seen[name] += 1
        unique.append(name if seen[name] == 1 else f"{name}__{seen[name]}")
    reason = f"column {', '.join(repeated)} appears more than once" if repeated else None
    return unique, reason


def read_csv(file: ArchivedFile) -> pl.DataFrame:
    """Every cell of a CSV file as text, with lineage and the row's error (module docstring).

    pyarrow reads a sound file in one pass; a file it refuses (a line with the wrong number
    of cells, a cell longer than its block of 1 MB) is read record by record with Python's
    ``csv`` module, so its good lines are kept; a cell may be as long as a JSON Lines line.
    Raises on a file neither can read (not UTF-8 text).
    """
    try:
        header = _csv_header(file.path)
        names, repeated = _unique_names(header)
        table = pa_csv.read_csv(
            file.path,
            read_options=pa_csv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(column_types={n: pa.string() for n in names}, strings_can_be_null=True,
                                                  quoted_strings_can_be_null=False, null_values=[""]),
        ) if names else None
    except pa.ArrowInvalid:
        return _read_csv_exactly(file)
    frame = pl.from_arrow(table) if table is not None else pl.DataFrame()
    frame = frame.with_row_index("__source_row", offset=1).with_columns(pl.col("__source_row").cast(pl.Int64))
    return _lineage(_flag(frame, "duplicate_field" if repeated else None, repeated), file)


def _csv_header(path: Path) -> list[str]:
    """The header record of a CSV file (empty for an empty file); raises on bytes that are not UTF-8."""
    _allow_cells_of(path.stat().st_size)
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return next(csv.reader(handle), [])


def _allow_cells_of(size: int) -> None:
    """Let Python's ``csv`` read cells of up to ``size`` characters: its default limit (131,072)
    refused a whole file for one long cell, which a JSON Lines line of any length never is;
    no cell is longer than its file. The limit is the ``csv`` module's and only grows."""
    if csv.field_size_limit() < size:
        csv.field_size_limit(size)


def _read_csv_exactly(file: ArchivedFile) -> pl.DataFrame:
    """Record by record: a record with another number of cells than the header is flagged
    ``malformed_record`` (its cells kept as far as the header names them)."""
    text = file.path.read_bytes().decode("utf-8-sig")
    _allow_cells_of(len(text))
    records = csv.reader(io.StringIO(text, newline=""))
    header = next(records, [])
    names, repeated = _unique_names(header)
    rows, rules, errors = [], [], []
    line = records.line_num
    for cells in records:
        first_line, line = line + 1, records.line_num
        if not cells:
            continue  # a blank line, as pyarrow skips it
        rows.append([c if c != "" else None for c in cells[: len(names)]] + [None] * (len(names) - len(cells)))
        if len(cells) == len(names):
            rules.append("duplicate_field" if repeated else None)
            errors.append(repeated)
        else:
            rules.append("malformed_record")
            errors.append(f"line {first_line} has {len(cells)} cells; the header has {len(names)}")
    frame = pl.DataFrame(rows, schema={n: pl.String for n in names}, orient="row")
    frame = frame.with_columns(pl.Series("__error_rule", rules, dtype=pl.String), pl.Series("__error", errors, dtype=pl.String))
    frame = frame.with_row_index("__source_row", offset=1).with_columns(pl.col("__source_row").cast(pl.Int64))
    return _lineage(frame, file)


VIRTUAL_PARQUET_COLUMNS = ("filename", "file_row_number")
"""Names DuckDB's ``read_parquet`` uses for its lineage columns; a file holding a column of
one of these names is read with pyarrow instead (:func:`parquet_table`)."""


class ParquetSchema(NamedTuple):
    """What staging needs to know of a Parquet file before reading its rows.

    Attributes:
        columns: (column, DuckDB type), as ``read_parquet`` shows them.
        repeated: why a column name appears twice, or None (``duplicate_field``).
        own_reader: the file holds a column named as a ``read_parquet`` lineage column.
    """

    columns: tuple[tuple[str, str], ...]
    repeated: str | None
    own_reader: bool


def parquet_schema(con: duckdb.DuckDBPyConnection, file: ArchivedFile) -> ParquetSchema:
    """The :class:`ParquetSchema` of a file; raises if its footer cannot be read."""
    names = pq.read_schema(file.path).names
    _, repeated = _unique_names(names)
    return ParquetSchema(parquet_columns(con, file), repeated, any(n in VIRTUAL_PARQUET_COLUMNS for n in names))


def parquet_table(file: ArchivedFile) -> pa.Table:
    """A Parquet file read whole by pyarrow, with the lineage and error columns (``native`` shape)."""
    table = pq.read_table(file.path)
    names, repeated = _unique_names(table.column_names)
    table = table.rename_columns(names)
    n = table.num_rows
    lineage = {
        "__partition_day": pa.array([dt.date.fromisoformat(file.partition_day)] * n, pa.date32()),
        "__source_file": pa.array([file.source_file] * n, pa.string()),
        "__source_row": pa.array(range(1, n + 1), pa.int64()),
        "__error_rule": pa.array(["duplicate_field" if repeated else None] * n, pa.string()),
        "__error": pa.array([repeated] * n, pa.string()),
    }
    for name, column in lineage.items():
        table = table.append_column(name, column)
    return table


def parquet_columns(con: duckdb.DuckDBPyConnection, file: ArchivedFile) -> tuple[tuple[str, str], ...]:
    """(column, DuckDB type) of a Parquet file; raises ``duckdb.Error`` if it cannot be read."""
    rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_literal(str(file.path))})").fetchall()
    return tuple((name, column_type) for name, column_type, *_ in rows)


def parquet_relation(files: list[ArchivedFile], repeated: str | None = None) -> str:
    """SQL relation stacking Parquet files of one schema, with lineage and error columns.

    One ``read_parquet`` over the list (DuckDB reads the files in parallel), its virtual
    ``filename`` and ``file_row_number`` columns mapped to the lineage. Files that hold
    columns of those names are read by :func:`parquet_table` instead. ``repeated``: the
    files name a column twice, so every row is flagged ``duplicate_field``.
    """
    paths = "[" + ", ".join(sql_literal(str(f.path)) for f in files) + "]"
    lineage = ", ".join(
        f"({sql_literal(str(f.path))}, DATE {sql_literal(f.partition_day)}, {sql_literal(f.source_file)})" for f in files
    )
    flag = (f"{sql_literal('duplicate_field')} AS __error_rule, {sql_literal(repeated)} AS __error" if repeated
            else "CAST(NULL AS VARCHAR) AS __error_rule, CAST(NULL AS VARCHAR) AS __error")
    return (
        f"(SELECT f.__partition_day, f.__source_file, CAST(p.file_row_number + 1 AS BIGINT) AS __source_row, {flag}, "
        f"p.* EXCLUDE (filename, file_row_number) "
        f"FROM read_parquet({paths}, filename = true, file_row_number = true) p "
        f"JOIN (VALUES {lineage}) AS f(__path, __partition_day, __source_file) ON f.__path = p.filename)"
    )


def count_rows(con: duckdb.DuckDBPyConnection, file: ArchivedFile) -> int:
    """Raw rows of a landed file as the readers see them (an unreadable file counts as 1)."""
    try:
        if file.suffix in PARQUET_SUFFIXES:
            return int(con.execute(f"SELECT count(*) FROM read_parquet({sql_literal(str(file.path))})").fetchone()[0])
        if file.suffix in CSV_SUFFIXES:
            return read_csv(file).height
    except Exception:  # noqa: BLE001 - an unreadable file is one quarantined row
        return 1
    return read_json_lines(file).height
