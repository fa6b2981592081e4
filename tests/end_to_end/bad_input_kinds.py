"""A catalogue of bad-input kinds, derived from the contracts so that no field is left out.

Each kind is one landing file holding one probe row (or one bad file), written beside the
valid rows it refers to, with keys of its own so that no two probes collide:

* **values**: for every field of every table, the value kinds its declared type, bounds, listed
  values and required flag call for (absent, JSON null, an object, a list, text in a number,
  NaN, Infinity, 1e309, fractions in integers, 2**70, text booleans, timestamp words, month 13,
  no time zone, epoch seconds, blank and whitespace text, a NUL, 10,000 characters, SQL text,
  an e-mail and an API key in identifiers, just outside each bound, an unlisted value);
* **records**: per table, a line that is not JSON, a JSON array, a JSON string, an empty
  object, an unknown field, a key twice, a truncated line, invalid UTF-8, CRLF line ends, a
  byte-order mark, blank lines between records;
* **files**: per table, an empty file, a CSV with only a header, a CSV without a required
  column, a CSV with an extra column, a CSV with a quoted newline, a Parquet column of the wrong
  type, a Parquet file of no rows, a truncated Parquet file, bytes that are not Parquet.

``expect`` says what the contract requires of the kind: ``refused`` (quarantined, never
staged), ``staged``, or ``either`` (a value the contract may take or refuse, such as 10,000
characters of free text: it must be accounted for, with a rule and reason when refused).
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from contracts.schema import Field
from contracts.tables import CONTRACTS

ABSENT = object()
RAW = "\u0000raw:"
"""Prefix of a value written into the JSON text as it is (``NaN``, ``Infinity``, ``1e309``)."""


@dataclass(frozen=True)
class Kind:
    name: str
    table: str
    expect: str
    write: Callable[[Path, str], list[str]]
    """``write(day folder, file stem)``: lands the kind, returns the file names written."""


def _json_line(record: dict) -> str:
    text = json.dumps({k: v for k, v in record.items() if v is not ABSENT}, allow_nan=True)
    for token in ("NaN", "Infinity", "-Infinity", "1e309"):
        text = text.replace(json.dumps(RAW + token), token)
    return text


def _bounds(f: Field) -> list[tuple[str, object]]:
    out = []
    for bound, step in (("ge", -1), ("gt", 0), ("le", 1), ("lt", 0)):
        value = getattr(f, bound)
        if value is None:
            continue
        outside = value + step * max(1e-9, abs(value) * 1e-6) if step else value
        if f.type == "BIGINT":
            outside = int(value) + (step or 0)
        out.append((f"just outside {bound} {value:g}", outside))
    return out


def value_kinds(f: Field) -> list[tuple[str, object, str]]:
    """(kind, value, expect) for one field, from its type and constraints."""
    empty = "refused" if f.required else "either"
    kinds: list[tuple[str, object, str]] = [("absent", ABSENT, "refused" if f.required and f.default is None else "either"),
                                            ("JSON null", None, empty)]
    if f.type != "JSON":
        kinds += [("an object", {"x": 1}, "refused"), ("a list", [1, 2], "refused")]
    if f.type == "VARCHAR":
        identifier = not f.free_text and f.allowed is None
        kinds += [("an integer", 7, "refused"), ("true", True, "refused"), ("empty text", "", empty),
                  ("only spaces", "   ", "refused" if f.required or f.non_blank else "either"),
                  ("a NUL character", "a\u0000b", "either"), ("10,000 characters", "x" * 10_000, "either"),
                  ("SQL text", "x'); DROP TABLE staged_sessions; --", "refused" if f.allowed else "either"),
                  ("an e-mail address", "ada@example.com", "refused" if identifier and not f.personal or f.allowed else "either"),
                  ("an API key", "sk-proj-" + "Q7" * 20, "refused" if identifier or f.allowed else "either")]
        if f.allowed:
            kinds.append(("an unlisted value", "not-listed", "refused"))
    elif f.type == "DOUBLE":
        kinds += [("text", "1.5", "refused"), ("the word NaN", "NaN", "refused"), ("NaN", RAW + "NaN", "refused"),
                  ("Infinity", RAW + "Infinity", "refused"), ("-Infinity", RAW + "-Infinity", "refused"),
                  ("1e309", RAW + "1e309", "refused"), ("true", True, "refused")]
        kinds += [(name, value, "refused") for name, value in _bounds(f)]
    elif f.type == "BIGINT":
        kinds += [("a fraction", 1.5, "refused"), ("2**70", 2**70, "refused"), ("text", "12", "refused"),
                  ("true", True, "refused")]
        kinds += [(name, value, "refused") for name, value in _bounds(f)]
        if f.allowed:
            kinds.append(("an unlisted number", max(f.allowed) + 1, "refused"))
    elif f.type == "BOOLEAN":
        kinds += [("text true", "true", "refused"), ("the number 1", 1, "refused"), ("yes", "yes", "refused")]
    elif f.type == "TIMESTAMPTZ":
        kinds += [("the word epoch", "epoch", "refused"), ("infinity", "infinity", "refused"),
                  ("month 13", "2026-13-45T00:00:00+00:00", "refused"), ("no time zone", "2026-10-02T10:00:00", "either"),
                  ("epoch seconds", 1_790_000_000, "refused"),
                  ("year 99999", "99999-01-01T00:00:00+00:00", "either"),  # a valid timestamp; refused off its day
                  ("empty text", "", empty)]
    else:  # JSON
        kinds += [("text", "abc", "refused"), ("a number", 3, "refused"), ("true", True, "refused"),
                  ("nested 100 deep", _deep(100), "refused")]
        kinds.append(("an object" if f.json_shape.startswith("list") else "a list",
                      {"x": 1} if f.json_shape.startswith("list") else [1], "refused"))
    return kinds


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _record_kinds(table: str, row: Callable[[str], dict]) -> list[tuple[str, Callable[[str], bytes], str]]:
    """Kinds of whole JSON Lines records: (kind, bytes of the file for a key, expect)."""
    def one(text: str) -> Callable[[str], bytes]:
        return lambda key: text.encode()

    def keyed(make: Callable[[str], str]) -> Callable[[str], bytes]:
        return lambda key: make(key).encode()

    def raw(make: Callable[[str], bytes]) -> Callable[[str], bytes]:
        return make

    return [
        ("a line that is not JSON", one("{not json\n"), "refused"),
        ("a JSON array", one("[1, 2, 3]\n"), "refused"),
        ("a JSON string", one('"a string"\n'), "refused"),
        ("an empty object", one("{}\n"), "refused"),
        ("an unknown field", keyed(lambda k: _json_line({**row(k), "extra_field": "x"}) + "\n"), "either"),
        ("a key twice", keyed(lambda k: _json_line(row(k))[:-1] + ', "schema_version": 1}\n'), "refused"),
        ("a truncated line", keyed(lambda k: _json_line(row(k))[:-7] + "\n"), "refused"),
        ("invalid UTF-8", raw(lambda k: _json_line(row(k)).encode().replace(b'"schema_version"', b'"\xff\xfe"') + b"\n"),
         "refused"),
        ("CRLF line ends", keyed(lambda k: _json_line(row(k)) + "\r\n"), "staged"),
        ("a byte-order mark", raw(lambda k: b"\xef\xbb\xbf" + _json_line(row(k)).encode() + b"\n"), "either"),
        ("blank lines between records", keyed(lambda k: "\n\n" + _json_line(row(k)) + "\n\n\n"), "staged"),
    ]


def _csv_cells(record: dict) -> dict:
    return {k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in record.items()}


def _file_kinds(table: str, row: Callable[[str], dict]) -> list[tuple[str, str, Callable[[str], bytes], str]]:
    """Kinds of whole files: (kind, extension, bytes of the file for a key, expect)."""
    required = next(f.name for f in CONTRACTS[table].fields if f.required and f.name != "schema_version")

    def csv(frame: Callable[[str], pl.DataFrame]) -> Callable[[str], bytes]:
        return lambda key: frame(key).write_csv().encode()

    def parquet(frame: Callable[[str], pl.DataFrame]) -> Callable[[str], bytes]:
        def write(key: str) -> bytes:
            out = io.BytesIO()
            frame(key).write_parquet(out)
            return out.getvalue()
        return write

    one = lambda key: pl.DataFrame([_csv_cells(row(key))])  # noqa: E731
    wrong_type = lambda key: pl.DataFrame([{**_csv_cells(row(key)), "schema_version": "one"}])  # noqa: E731
    good_parquet = parquet(one)
    return [
        ("an empty file", "jsonl", lambda key: b"", "staged"),
        ("a CSV with only a header", "csv", lambda key: (",".join(row(key)) + "\n").encode(), "staged"),
        ("a CSV without a required column", "csv", csv(lambda key: one(key).drop(required)), "refused"),
        ("a CSV with an extra column", "csv", csv(lambda key: one(key).with_columns(extra=pl.lit("x"))), "either"),
        ("a CSV cell with a quoted newline", "csv",
         csv(lambda key: one(key).with_columns(pl.lit("two\nlines").alias(required))), "either"),
        ("a Parquet column of the wrong type", "parquet", parquet(wrong_type), "refused"),
        ("a Parquet file of no rows", "parquet", parquet(lambda key: one(key).clear()), "staged"),
        ("a truncated Parquet file", "parquet", lambda key: good_parquet(key)[:-40], "refused"),
        ("bytes that are not Parquet", "parquet", lambda key: b"PAR1 not really a parquet file", "refused"),
    ]


def catalogue(row_of: Callable[[str, str], dict]) -> list[Kind]:
    """Every kind, for a probe-row maker ``row_of(table, key)`` that gives a valid row with keys of
    its own (the parents it refers to are landed by the caller)."""
    kinds = []
    for table, contract in CONTRACTS.items():
        for f in contract.fields:
            for name, value, expect in value_kinds(f):
                def write(folder, stem, table=table, field=f.name, value=value):
                    record = {**row_of(table, stem), field: value if value is ABSENT else copy.deepcopy(value)}
                    (folder / f"{stem}.jsonl").write_text(_json_line(record) + "\n", encoding="utf-8")
                    return [f"{stem}.jsonl"]
                kinds.append(Kind(f"{table}.{f.name}: {name}", table, expect, write))
        row = lambda key, table=table: row_of(table, key)  # noqa: E731
        for name, content, expect in _record_kinds(table, row):
            def write(folder, stem, content=content):
                (folder / f"{stem}.jsonl").write_bytes(content(stem))
                return [f"{stem}.jsonl"]
            kinds.append(Kind(f"{table}: {name}", table, expect, write))
        for name, extension, content, expect in _file_kinds(table, row):
            def write(folder, stem, content=content, extension=extension):
                (folder / f"{stem}.{extension}").write_bytes(content(stem))
                return [f"{stem}.{extension}"]
            kinds.append(Kind(f"{table}: {name}", table, expect, write))
    assert len({k.name for k in kinds}) == len(kinds)
    return kinds

