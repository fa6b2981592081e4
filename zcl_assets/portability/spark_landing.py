"""Landed JSON Lines read by Apache Spark into the ``json`` source shape of ``contracts.validate``.

The Spark side of ``read_json_lines`` of the engine seam (``zcl_assets.engine``): the archived
files of a table's changed days are read on the executors, straight from the landing archive,
and their lines written as Parquet under ``<spark warehouse>/_landed/<table>/``, one row per
non-blank line with its lineage (day, landed file, physical line number within the file): the
rows ``zcl_assets.ingest.readers.read_json_lines`` gives. The warehouse runs the contract SQL
over that Parquet.

How each property of the readers is kept on Spark, in built-in Spark SQL only:

- **line numbers in file order**: each file is read whole (``binaryFile``, one row per file,
  so at most 2 GB a file) and split on ``\\n`` with ``posexplode``, so a line's number is its
  position in its own file whatever the partitioning (``monotonically_increasing_id`` follows
  the partitions, not the file);
- **lines as polars reads them**: a byte-order mark opening the file is dropped, one ``\\r``
  ending a line is dropped (CRLF), a lone ``\\r`` inside a line is kept, and a line of nothing
  but white space (Unicode ``White_Space``, as Rust's ``trim`` and Java's ``(?U)\\s`` both
  define it) is skipped;
- **bytes that are not UTF-8**: a file whose bytes do not come back from decoding and encoding
  again gives no lines here but one row numbered 0 that names it; the caller reads such a file
  with the Python reader (its lines kept with the bad bytes escaped, flagged
  ``invalid_encoding``), as on DuckDB.

The same archived bytes landed under two names or days are one archive path with two lineages:
each gets its own rows.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from zcl_assets.ingest.readers import ArchivedFile

REFUSED_ROW = 0
"""``__source_row`` of the row that marks a file left to the Python reader."""

LINES_SQL = rf"""
SELECT l.partition_day AS __partition_day, l.source_file AS __source_file, l.file_order AS __file_order,
       CAST(x.pos + 1 AS BIGINT) AS __source_row,
       CASE WHEN endswith(x.line, '\r') THEN substr(x.line, 1, char_length(x.line) - 1) ELSE x.line END AS __record,
       CAST(NULL AS STRING) AS __error, false AS __encoding_error
FROM (SELECT path, CASE WHEN startswith(text, '\uFEFF') THEN substr(text, 2) ELSE text END AS text
      FROM (SELECT path, decode(content, 'UTF-8') AS text, encode(decode(content, 'UTF-8'), 'UTF-8') = content AS utf8
            FROM landed_bytes)
      WHERE utf8) f
JOIN landed_lineage l ON l.path = f.path
LATERAL VIEW posexplode(split(f.text, '\n', -1)) x AS pos, line
WHERE NOT x.line RLIKE '(?U)\\A\\s*\\z'
UNION ALL
SELECT l.partition_day, l.source_file, l.file_order, CAST({REFUSED_ROW} AS BIGINT), CAST(NULL AS STRING),
       'bytes that are not UTF-8', true
FROM landed_bytes b JOIN landed_lineage l ON l.path = b.path
WHERE encode(decode(b.content, 'UTF-8'), 'UTF-8') <> b.content
"""
"""Spark SQL of the ``json``-shape rows of the files of ``landed_lineage`` (module docstring);
a row numbered ``REFUSED_ROW`` marks a file that is not UTF-8."""

def read_json_lines(session, files: list[ArchivedFile], folder: str) -> str:
    """Read ``files`` on Spark and write their ``json``-shape rows (and ``__file_order``, the
    file's position in ``files``) as Parquet to ``folder``; returns ``folder``.

    Raises:
        Exception: whatever Spark raises when a file cannot be read at all (a missing file, one
            beyond ``binaryFile``'s 2 GB); the caller then reads the files as on DuckDB.
    """
    paths = sorted({str(f.path.resolve()) for f in files})
    session.read.format("binaryFile").load([_glob_literal(p) for p in paths]) \
        .select("path", "content").createOrReplaceTempView("landed_bytes")
    # Spark names a local file by its URL, file:/path, without escaping
    session.createDataFrame(
        [(f"file:{f.path.resolve()}", dt.date.fromisoformat(f.partition_day), f.source_file, i) for i, f in enumerate(files)],
        "path STRING, partition_day DATE, source_file STRING, file_order INT",
    ).createOrReplaceTempView("landed_lineage")
    session.sql(LINES_SQL).write.mode("overwrite").parquet(folder)
    return folder


def _glob_literal(path: str) -> str:
    """``path`` with the characters Hadoop reads as a glob escaped (a file may be named ``a[1].jsonl``)."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


def landed_folder(location: str, table: str) -> str:
    """Where the JSON Lines rows of ``table`` are written under the Spark warehouse."""
    return str(Path(location) / "_landed" / table)


__all__ = ["LINES_SQL", "REFUSED_ROW", "landed_folder", "read_json_lines"]
