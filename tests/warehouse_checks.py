"""Assertions on a warehouse that several end-to-end tests share."""

import duckdb

from contracts.tables import CONTRACTS


def conservation_gaps(con: duckdb.DuckDBPyConnection, tables=tuple(CONTRACTS)) -> dict[str, tuple[int, int, int]]:
    """Tables whose raw rows differ from staged + contract-quarantined rows: {table: (raw, staged, quarantined)}.

    Raw rows are those of the current landed files as counted when archived.
    """
    gaps = {}
    for table in tables:
        raw = con.execute(
            "SELECT coalesce(sum(row_count), 0) FROM landing_manifest WHERE table_name = ? AND superseded_at IS NULL", [table]
        ).fetchone()[0]
        staged = con.execute(f"SELECT count(*) FROM staged_{table}").fetchone()[0]
        quarantined = con.execute(
            "SELECT count(*) FROM quarantine WHERE source_table = ? AND stage = 'contract'", [table]
        ).fetchone()[0]
        if raw != staged + quarantined:
            gaps[table] = (raw, staged, quarantined)
    return gaps


def table_rows(con: duckdb.DuckDBPyConnection, table: str, drop: tuple[str, ...] = ()) -> list[tuple]:
    """Every row of ``table`` without the columns in ``drop``, sorted: for comparing warehouses."""
    columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall() if r[0] not in drop]
    listed = ", ".join(f'"{c}"' for c in columns)
    return con.execute(f"SELECT {listed} FROM {table} ORDER BY ALL").fetchall()


def run_one_night(landing, warehouse, as_of: str) -> None:
    """The nightly job once, on an ephemeral Dagster instance, over ``landing`` into ``warehouse``;
    fails the test if a run fails. The paths are exported only while it runs."""
    import dagster as dg
    import pytest

    from zcl_assets.runner import run_night

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZCL_LANDING_DIR", str(landing))
        mp.setenv("ZCL_WAREHOUSE", str(warehouse))
        with dg.DagsterInstance.ephemeral() as instance:
            results = run_night(instance, as_of)
    assert results and all(r.success for r in results), [r.run_id for r in results if not r.success]
