"""Assertions on a warehouse that several end-to-end tests share."""

import struct
from collections import Counter
from collections.abc import Mapping

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


def run_one_night(landing, warehouse, as_of: str, instance=None) -> list:
    """The nightly job once over ``landing`` into ``warehouse``, on ``instance`` (a fresh
    ephemeral Dagster instance when None); fails the test if a run fails. The paths are
    exported only while it runs. Returns the results of the runs made."""
    import dagster as dg
    import pytest

    from zcl_assets.runner import run_night

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZCL_LANDING_DIR", str(landing))
        mp.setenv("ZCL_WAREHOUSE", str(warehouse))
        if instance is None:
            with dg.DagsterInstance.ephemeral() as ephemeral:
                results = run_night(ephemeral, as_of)
        else:
            results = run_night(instance, as_of)
    assert results and all(r.success for r in results), [r.run_id for r in results if not r.success]
    return results


def warehouse_tables(con: duckdb.DuckDBPyConnection, schemas=("main", "internal")) -> set[str]:
    """Every base table of ``schemas`` as ``schema.table`` (information_schema)."""
    rows = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "AND table_catalog = current_database() AND list_contains($schemas, table_schema)", {"schemas": list(schemas)}
    ).fetchall()
    return {f"{schema}.{name}" for schema, name in rows}


def bits(value):
    """``value`` with every float, at any depth (lists, structs, maps), replaced by its text and
    IEEE 754 bit pattern, so that equality is bit for bit: NaN equals NaN of the same bits, -0.0
    differs from 0.0, and 0.1 + 0.2 differs from 0.3."""
    if isinstance(value, float):
        return f"{value!r}|{struct.pack('>d', value).hex()}"
    if isinstance(value, (list, tuple)):
        return tuple(bits(v) for v in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), bits(v)) for k, v in value.items()))
    return value


def exact_rows(
    con: duckdb.DuckDBPyConnection, table: str, drop: tuple[str, ...] = (), where: str = "",
    columns: Mapping[str, str] | None = None, params: Mapping[str, object] | None = None,
) -> Counter:
    """The rows of ``table`` as a multiset of tuples, floats as their bits (:func:`bits`).

    Args:
        table: ``schema.table`` or a table of the main schema.
        drop: columns left out (bookkeeping that differs by nature, such as load times).
        where: an optional SQL condition selecting the rows compared (the current state of an
            append-only table).
        columns: SQL expressions that replace a column's value (a path made relative), by name.
        params: named parameters (``$name``) of ``where`` and ``columns``.
    """
    schema, _, name = table.rpartition(".")
    described = con.execute(f'DESCRIBE "{schema or "main"}"."{name}"').fetchall()
    selected = [(columns or {}).get(c, f'"{c}"') for c, *_ in described if c not in drop]
    sql = f'SELECT {", ".join(selected) or "1"} FROM "{schema or "main"}"."{name}"' + (f" WHERE {where}" if where else "")
    return Counter(bits(row) for row in con.execute(sql, dict(params or {})).fetchall())


def row_differences(left: Counter, right: Counter, limit: int = 5) -> str:
    """Empty when both multisets of rows are equal; else the counts and up to ``limit`` rows found only on each side."""
    if left == right:
        return ""
    only_left, only_right = left - right, right - left
    lines = [f"{sum(left.values())} rows against {sum(right.values())}; "
             f"{sum(only_left.values())} only left, {sum(only_right.values())} only right"]
    lines += [f"  left only:  {row}" for row in sorted(only_left, key=repr)[:limit]]
    lines += [f"  right only: {row}" for row in sorted(only_right, key=repr)[:limit]]
    return "\n".join(lines)


RUN_TIME_COLUMNS = {
    ("landing_manifest", "loaded_at"), ("landing_manifest", "superseded_at"), ("landing_manifest", "archive_path"),
    ("quarantine", "quarantined_at"), ("experiment_analysis", "analysed_at"), ("experiment_plans", "planned_at"),
    ("knowledge_records", "recorded_at"),
}
"""(table, column) holding when or where a run wrote a row, not what it computed."""


BOOKKEEPING = {
    "internal.change_log": "what each pass changed, under the pass's sequence number: the history of the nights",
    "internal.change_cursors": "per derived table, the last sequence number read and a code fingerprint",
    "internal.staging_state": "per staged table, a version that grows with every staging and a fingerprint of those read",
}
"""Tables that number the passes that made a warehouse (not its state): two warehouses of the same
files reached by different sequences of runs (night by night, or with killed runs) differ there."""


def every_table(warehouse, skip: tuple[str, ...] = ()) -> dict[str, Counter]:
    """Every table of a warehouse file (:func:`warehouse_tables`) as its multiset of rows
    (:func:`exact_rows`, floats to the last bit), run-time columns left out: two of these
    compare equal only if the tables are bit-identical."""
    out = {}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for table in sorted(set(warehouse_tables(con)) - set(skip)):
            name = table.rpartition(".")[2]
            out[table] = exact_rows(con, table, drop=tuple(c for t, c in RUN_TIME_COLUMNS if t == name))
    return out
