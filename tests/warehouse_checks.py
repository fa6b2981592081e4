"""Assertions on a warehouse that several end-to-end tests share."""

import duckdb

from contracts.tables import CONTRACTS


def conservation_gaps(con: duckdb.DuckDBPyConnection, tables=tuple(CONTRACTS)) -> dict[str, tuple[int, int, int]]:
    """Tables whose raw rows differ from staged + contract-quarantined rows: {table: (raw, staged, quarantined)}."""
    gaps = {}
    for table in tables:
        raw = con.execute("SELECT count(*) FROM raw_records WHERE table_name = ?", [table]).fetchone()[0]
        staged = con.execute(f"SELECT count(*) FROM staged_{table}").fetchone()[0]
        quarantined = con.execute(
            "SELECT count(*) FROM quarantine WHERE source_table = ? AND stage = 'contract'", [table]
        ).fetchone()[0]
        if raw != staged + quarantined:
            gaps[table] = (raw, staged, quarantined)
    return gaps
