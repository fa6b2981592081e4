"""Pseudonymisation of user ids at staging: a keyed hash (HMAC-SHA-256, RFC 2104).

With ``ZCL_PSEUDONYM_KEY`` set, every field the contracts mark ``personal`` (``user_id`` of
sessions, ``unit_id`` of assignments) is staged as ``u_`` + the first 32 hex digits (128
bits) of HMAC-SHA-256(key, value). The same value gives the same pseudonym in every table
and every run, so joins, unit counts and user-level statistics are unchanged; without the
key nobody can compute a pseudonym from a guessed e-mail address, which an unkeyed hash
would allow. The key must hold at least ``MIN_KEY_BYTES`` bytes and must stay the same for
the life of a warehouse: a warehouse staged under another key (or none) holds other ids, so
after setting or changing it, load afresh (see docs/pipeline.md, "Pseudonymisation").
"""

from __future__ import annotations

import hashlib
import hmac
import os

import duckdb
import pyarrow as pa

KEY_ENV = "ZCL_PSEUDONYM_KEY"
"""Environment variable holding the secret key (text, at least ``MIN_KEY_BYTES`` bytes)."""

MIN_KEY_BYTES = 32
"""Shortest key accepted: 256 bits, the output size of SHA-256 (RFC 2104 section 3)."""

SQL_FUNCTION = "zcl_pseudonym"
"""Name of the DuckDB function :func:`register_function` adds to a connection."""

HEX_DIGITS = 32


def pseudonym(key: bytes, value: str) -> str:
    """The pseudonym of ``value`` under ``key``.

    Examples:
        >>> pseudonym(b"k" * 32, "alice@example.com") == pseudonym(b"k" * 32, "alice@example.com")
        True
        >>> pseudonym(b"k" * 32, "alice@example.com")[:2], len(pseudonym(b"k" * 32, "x"))
        ('u_', 34)
    """
    return "u_" + hmac.new(key, value.encode("utf-8"), hashlib.sha256).hexdigest()[:HEX_DIGITS]


def key_from_environment() -> bytes | None:
    """The key of ``ZCL_PSEUDONYM_KEY`` (None when unset or empty), read when called.

    Raises:
        ValueError: the key is shorter than ``MIN_KEY_BYTES`` bytes (the message never
            shows the key).
    """
    text = os.environ.get(KEY_ENV, "")
    if not text:
        return None
    key = text.encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"{KEY_ENV} holds {len(key)} bytes; a pseudonym key needs at least {MIN_KEY_BYTES}")
    return key


def register_function(con: duckdb.DuckDBPyConnection, key: bytes) -> None:
    """Add ``zcl_pseudonym(VARCHAR) -> VARCHAR`` to ``con``: :func:`pseudonym` under ``key``.

    The key lives in the function's closure, never in SQL text. Replaces an earlier
    registration on the same connection.
    """
    def batch(values: pa.Array) -> pa.Array:
        return pa.array([None if v is None else pseudonym(key, v) for v in values.to_pylist()], type=pa.string())

    try:
        con.remove_function(SQL_FUNCTION)
    except (duckdb.InvalidInputException, duckdb.CatalogException):
        pass
    con.create_function(SQL_FUNCTION, batch, ["VARCHAR"], "VARCHAR", type="arrow", null_handling="special")
