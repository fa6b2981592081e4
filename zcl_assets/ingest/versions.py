"""Whether a derived table is current: the fingerprint of the staged data and code it was built from.

Staging bumps a table's version in ``internal.staging_state`` whenever its rows may have
changed. A table derived from staged tables (verification records, the experience table,
loop health, the look's aggregates) records the fingerprint of those versions and of the
text of the code that builds it; a later run with the same fingerprint keeps the table
instead of rebuilding it, so a night with nothing newly landed costs what the look costs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import duckdb

from sql import load_sql


def code_fingerprint(*code: str) -> str:
    """SHA-256 of code texts (SQL, rules): what a table was built by, whatever its inputs."""
    digest = hashlib.sha256()
    for text in code:
        digest.update(text.encode() + b"\x00")
    return digest.hexdigest()


def input_fingerprint(con: duckdb.DuckDBPyConnection, *code: str) -> str:
    """SHA-256 of the staged tables' versions and the given code texts (SQL, contracts).

    A warehouse without staging bookkeeping (tables written by hand) has no versions: its
    fingerprint depends on the code alone, so derived tables are rebuilt only when missing.
    """
    versions = con.execute("SELECT table_name, version FROM internal.staging_state ORDER BY table_name").fetchall() \
        if _exists(con, "internal", "staging_state") else []
    digest = hashlib.sha256(json.dumps(versions).encode())
    for text in code:
        digest.update(b"\x00" + text.encode())
    return digest.hexdigest()


def built_at(con: duckdb.DuckDBPyConnection, name: str, fingerprint: str, table: str) -> dt.datetime | None:
    """When ``name`` was built from inputs with this fingerprint, if ``table`` still exists; else None."""
    schema, _, bare = table.rpartition(".")
    if not (_exists(con, schema or "main", bare) and _exists(con, "internal", "derived_state")) or not _has_versions(con):
        return None
    row = con.execute("SELECT built_at FROM internal.derived_state WHERE name = ? AND fingerprint = ?", [name, fingerprint]).fetchone()
    return row[0] if row else None


def record_built(con: duckdb.DuckDBPyConnection, name: str, fingerprint: str) -> None:
    """Record that ``name`` was built from inputs with this fingerprint (call inside its write transaction)."""
    con.execute(load_sql("create_internal_schema"))
    con.execute(load_sql("create_derived_state"))
    con.execute(load_sql("upsert_derived_state"), {"name": name, "fingerprint": fingerprint})


def _exists(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    return bool(con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?", [schema, table]
    ).fetchone()[0])


def _has_versions(con: duckdb.DuckDBPyConnection) -> bool:
    """Staging keeps versions: without them (tables written by hand) nothing counts as current."""
    return _exists(con, "internal", "staging_state")
