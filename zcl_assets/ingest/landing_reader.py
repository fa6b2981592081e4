"""Read one landed file into raw rows: (1-based row number, record as JSON text).

JSON Lines keep each non-blank line verbatim, so a malformed line is kept and later
quarantined. CSV and Parquet rows become JSON objects of their cells (CSV cells as text).
A file that cannot be read at all gives a single row with a null record, which contract
validation quarantines as ``malformed_record``: nothing landed is ever lost silently.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl


def read_landed_file(path: Path) -> tuple[list[tuple[int, str | None]], str | None]:
    """Raw rows of ``path`` and, if the file could not be read, the error text.

    Returns:
        (rows, error): rows as (row number, JSON text or None); error is None on success.
    """
    suffix = path.suffix.lower()
    try:
        if suffix in (".jsonl", ".ndjson", ".json"):
            with path.open("r", encoding="utf-8", errors="replace") as handle:
                rows = [(i, line.rstrip("\r\n")) for i, line in enumerate(handle, start=1) if line.strip()]
            return rows, None
        if suffix == ".csv":
            frame = pl.read_csv(path, infer_schema=False, raise_if_empty=False)
        elif suffix == ".parquet":
            frame = pl.read_parquet(path)
        else:
            return [(1, None)], f"unsupported file type {suffix}"
    except Exception as exc:  # noqa: BLE001 - any unreadable file becomes one quarantined row
        return [(1, None)], f"{type(exc).__name__}: {exc}"
    if frame.height == 0:
        return [], None
    encoded = frame.select(pl.struct(pl.all()).struct.json_encode().alias("record")).get_column("record")
    return list(enumerate(encoded.to_list(), start=1)), None
