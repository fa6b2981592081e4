"""Read archived landed files as relations of the three source shapes of ``contracts.validate``.

- JSON Lines (``.jsonl``, ``.ndjson``, ``.json``): one row per non-blank line, numbered by
  its physical line (1-based), as text (``json`` shape). A line that is not valid UTF-8 is
  kept with its bad bytes escaped (``\\xNN``) and flagged.
- CSV: every cell as text, one row per data row (1 = the first row after the header)
  (``text`` shape). Files are stacked by column name; a column a file lacks is absent.
- Parquet: typed columns as stored (``native`` shape), row numbers from the file.

A file that cannot be read at all is one row of the ``json`` shape with the error, so it is
counted and quarantined (``unreadable_file``) instead of lost. :func:`count_rows` counts
with the same readers, so the raw counts and the staged + quarantined rows agree by
construction of the same parser, and disagree only when a later step loses a row.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from contracts.schema import sql_literal

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet",)

_JSON_SCHEMA = {
    "__partition_day": pl.Date,
    "__source_file": pl.String,
    "__source_row": pl.Int64,
    "__record": pl.String,
    "__error": pl.String,
    "__encoding_error": pl.Boolean,
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


def unreadable(file: ArchivedFile, error: str) -> pl.DataFrame:
    """The single ``json``-shape row that stands for a file that cannot be read."""
    return pl.DataFrame(
        [{"__partition_day": dt.date.fromisoformat(file.partition_day), "__source_file": file.source_file,
          "__source_row": 1, "__record": None, "__error": f"unreadable file: {error}", "__encoding_error": False}],
        schema=_JSON_SCHEMA,
    )


def read_json_lines(file: ArchivedFile) -> pl.DataFrame:
    """Non-blank lines of a JSON Lines file as a ``json``-shape frame.

    A fast path reads the lines with polars; a file it refuses (bytes that are not UTF-8,
    control characters) is read line by line in Python, so every line is kept.
    """
    try:
        frame = pl.read_csv(
            file.path, has_header=False, separator="\x01", quote_char=None, new_columns=["__record"],
            schema={"__record": pl.String}, row_index_name="__source_row", row_index_offset=1,
        )
        frame = frame.with_columns(
            pl.col("__source_row").cast(pl.Int64), pl.lit(None, dtype=pl.String).alias("__error"),
            pl.lit(False).alias("__encoding_error"),
        )
    except Exception:  # noqa: BLE001 - the exact reader below handles what polars refuses
        try:
            frame = _read_lines_exactly(file.path)
        except OSError as exc:
            return unreadable(file, f"{type(exc).__name__}: {exc}")
    frame = frame.filter(pl.col("__record").is_not_null() & (pl.col("__record").str.strip_chars() != ""))
    return _lineage(frame, file).select(list(_JSON_SCHEMA))


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
            "__error": ["line is not valid UTF-8" if bad else None for bad in encoding],
            "__encoding_error": encoding,
        },
        schema={"__source_row": pl.Int64, "__record": pl.String, "__error": pl.String, "__encoding_error": pl.Boolean},
    )


def read_csv(file: ArchivedFile) -> pl.DataFrame:
    """Every cell of a CSV file as text, with lineage; raises on a file polars cannot read."""
    frame = pl.read_csv(file.path, infer_schema=False, raise_if_empty=False, row_index_name="__source_row", row_index_offset=1)
    return _lineage(frame.with_columns(pl.col("__source_row").cast(pl.Int64)), file)


def parquet_columns(con: duckdb.DuckDBPyConnection, file: ArchivedFile) -> tuple[tuple[str, str], ...]:
    """(column, DuckDB type) of a Parquet file; raises ``duckdb.Error`` if it cannot be read."""
    rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet({sql_literal(str(file.path))})").fetchall()
    return tuple((name, column_type) for name, column_type, *_ in rows)


def parquet_relation(files: list[ArchivedFile], columns: tuple[tuple[str, str], ...] = ()) -> str:
    """SQL relation stacking Parquet files of one schema, with lineage columns.

    One ``read_parquet`` over the list (DuckDB reads the files in parallel), its virtual
    ``filename`` and ``file_row_number`` columns mapped to the lineage; files that hold
    columns of those names are read one by one instead.
    """
    if any(name in ("filename", "file_row_number") for name, _ in columns):
        parts = [
            f"SELECT DATE {sql_literal(f.partition_day)} AS __partition_day, {sql_literal(f.source_file)} AS __source_file, "
            f"CAST(file_row_number + 1 AS BIGINT) AS __source_row, * EXCLUDE (file_row_number) "
            f"FROM read_parquet({sql_literal(str(f.path))}, file_row_number = true)"
            for f in files
        ]
        return "(" + "\nUNION ALL ".join(parts) + ")"
    paths = "[" + ", ".join(sql_literal(str(f.path)) for f in files) + "]"
    lineage = ", ".join(
        f"({sql_literal(str(f.path))}, DATE {sql_literal(f.partition_day)}, {sql_literal(f.source_file)})" for f in files
    )
    return (
        f"(SELECT f.__partition_day, f.__source_file, CAST(p.file_row_number + 1 AS BIGINT) AS __source_row, "
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
