"""Staging: the archived files of the pending days of a table to staged rows and quarantine.

One pass per table and run, over every pending day at once:

1. **Candidates.** Every archived file of the pending days is read (``readers``) and run
   through the generated contract SQL (``contracts.validate``): typed fields, and for a row
   breaking a row-level rule its rule, reasons and record. Experiments also get the
   registration structure checks (``contracts.registration``).
2. **Cross-row rules** over the *subject*: the candidates that passed, plus the staged and
   held rows of every other day. Keys are unique (the first row by day, file and row is
   kept) and references resolve against the other staged tables as they are after this
   run. Because the subject is the whole post-replacement state, loading, correcting and
   reloading gives the same tables as a fresh load of the corrected files.
3. **One transaction** replaces the pending days' rows, moves rows of other days between
   ``staged_<table>`` and ``internal.held_<table>`` (contract-valid rows held back by a
   cross-row rule, re-checked every run: an outcome whose session lands later is staged
   then), rewrites the table's contract quarantine rows and clears the pending days.

A table is staged again when it has pending days or when a table its cross-row rules read
changed since its last staging (``internal.staging_state``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import duckdb
import polars as pl

from contracts.registration import registration_problems
from contracts.schema import quote_identifier
from contracts.tables import CONTRACTS
from contracts.validate import Source, candidate_select
from resources.warehouse import transaction
from sql import load_sql
from zcl_assets.ingest.readers import (
    CSV_SUFFIXES,
    JSON_SUFFIXES,
    PARQUET_SUFFIXES,
    ArchivedFile,
    as_batches,
    parquet_columns,
    parquet_relation,
    read_csv,
    read_json_lines,
    unreadable,
)

CROSS_ROW_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "experiment_events": (("unknown_experiment", "find_unregistered_experiments"),),
    "assignments": (
        ("unknown_experiment", "find_unregistered_experiments"),
        ("arm_not_declared", "find_undeclared_arms"),
        ("assigned_before_registration", "find_assignments_before_registration"),
    ),
    "outcomes": (
        ("unknown_session", "find_outcomes_of_unknown_sessions"),
        ("outcome_before_assignment", "find_outcomes_before_assignment"),
    ),
    "arm_snapshots": (
        ("unknown_experiment", "find_unregistered_experiments"),
        ("arm_not_declared", "find_undeclared_arms"),
    ),
}
"""Per table, its reference rules in order: (rule, SQL file over ``subject``). Every table
also has ``duplicate_key``, checked first."""

STAGING_DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "experiments": (),
    "experiment_events": ("experiments",),
    "sessions": (),
    "assignments": ("experiments",),
    "outcomes": ("sessions", "assignments"),
    "admission_events": (),
    "arm_snapshots": ("experiments",),
}
"""The staged tables each table's cross-row rules read (staged before it)."""

CROSS_ROW_RULE_NAMES: frozenset[str] = frozenset(
    {"duplicate_key"} | {rule for rules in CROSS_ROW_RULES.values() for rule, _ in rules}
)


class StageResult(NamedTuple):
    """What one staging pass did for one table.

    Attributes:
        table: the landing table.
        days: per staged day ``(day, raw rows, staged rows, quarantined rows)``.
        by_rule: quarantined rows of those days by rule.
        rechecked: the cross-row rules ran (pending days or a changed dependency).
        released: rows of other days moved from held to staged.
        held_back: rows of other days moved from staged to held.
        preview: up to 10 quarantined rows of this pass (lineage, rule, reason).
    """

    table: str
    days: list[tuple[str, int, int, int]]
    by_rule: dict[str, int]
    rechecked: bool
    released: int
    held_back: int
    preview: pl.DataFrame

    @property
    def staged(self) -> int:
        return sum(d[2] for d in self.days)

    @property
    def quarantined(self) -> int:
        return sum(d[3] for d in self.days)


def held_table(table: str) -> str:
    """Name of the table of contract-valid rows held back by a cross-row rule."""
    return CONTRACTS[table].held_table


def _versions(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[int, str]]:
    return {t: (v, c) for t, v, c in con.execute("SELECT table_name, version, checked_against FROM internal.staging_state").fetchall()}


def needs_staging(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """True when ``table`` has pending days or a table its rules read changed since."""
    pending = con.execute(load_sql("select_pending_days"), {"table": table}).fetchall()
    if pending:
        return True
    versions = _versions(con)
    wanted = json.dumps({d: versions.get(d, (0, ""))[0] for d in STAGING_DEPENDS_ON[table]}, sort_keys=True)
    return versions.get(table, (0, json.dumps({d: 0 for d in STAGING_DEPENDS_ON[table]}, sort_keys=True)))[1] != wanted


def stage_table(con: duckdb.DuckDBPyConnection, table: str) -> StageResult:
    """Stage the pending days of ``table`` and re-check its cross-row rules (see module doc).

    Raises:
        KeyError: unknown table.
    """
    contract = CONTRACTS[table]
    if not needs_staging(con, table):
        return StageResult(table, [], {}, False, 0, 0, pl.DataFrame())
    files = [ArchivedFile(day, name, Path(path)) for day, name, path in con.execute(load_sql("select_pending_files"), {"table": table}).fetchall()]
    pending = [d for (d,) in con.execute(load_sql("select_pending_days"), {"table": table}).fetchall()]
    _build_candidates(con, table, files)
    if table == "experiments":
        _registration_rules(con)
    con.execute("CREATE OR REPLACE TEMP TABLE pending AS SELECT CAST(unnest($days::VARCHAR[]) AS DATE) AS partition_day", {"days": pending})
    fields = ", ".join(quote_identifier(f) for f in contract.field_names)
    lineage = "partition_day, source_file, source_row"
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW subject AS "
        f"SELECT {lineage}, {fields} FROM candidates WHERE __rule IS NULL "
        f"UNION ALL SELECT {lineage}, {fields} FROM {held_table(table)} WHERE partition_day NOT IN (SELECT partition_day FROM pending) "
        f"UNION ALL SELECT {lineage}, {fields} FROM {contract.staged_table} WHERE partition_day NOT IN (SELECT partition_day FROM pending)"
    )
    _cross_row_failures(con, table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE new_held AS SELECT s.* FROM subject s SEMI JOIN cross_failures USING ({lineage})")
    released = con.execute(
        f"SELECT count(*) FROM {held_table(table)} h WHERE partition_day NOT IN (SELECT partition_day FROM pending) "
        f"AND NOT EXISTS (SELECT 1 FROM new_held n WHERE n.partition_day = h.partition_day AND n.source_file = h.source_file AND n.source_row = h.source_row)"
    ).fetchone()[0]
    held_back = con.execute(
        f"SELECT count(*) FROM new_held n WHERE partition_day NOT IN (SELECT partition_day FROM pending) AND EXISTS "
        f"(SELECT 1 FROM {contract.staged_table} s WHERE n.partition_day = s.partition_day AND n.source_file = s.source_file AND n.source_row = s.source_row)"
    ).fetchone()[0]
    versions = _versions(con)
    checked = json.dumps({d: versions.get(d, (0, ""))[0] for d in STAGING_DEPENDS_ON[table]}, sort_keys=True)
    params = {"table": table}
    with transaction(con):
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE released AS SELECT h.* FROM {held_table(table)} h ANTI JOIN new_held USING ({lineage}) "
            f"WHERE h.partition_day NOT IN (SELECT partition_day FROM pending)"
        )
        con.execute(
            f"DELETE FROM {contract.staged_table} s WHERE s.partition_day IN (SELECT partition_day FROM pending) "
            f"OR EXISTS (SELECT 1 FROM new_held n WHERE n.partition_day = s.partition_day AND n.source_file = s.source_file AND n.source_row = s.source_row)"
        )
        con.execute(
            f"INSERT INTO {contract.staged_table} BY NAME SELECT {lineage}, {fields} FROM ("
            f"SELECT {lineage}, {fields} FROM candidates c ANTI JOIN new_held USING ({lineage}) WHERE c.__rule IS NULL "
            f"UNION ALL SELECT {lineage}, {fields} FROM released)"
        )
        con.execute(f"DELETE FROM {held_table(table)}")
        con.execute(f"INSERT INTO {held_table(table)} BY NAME SELECT * FROM new_held ORDER BY {lineage}")
        con.execute(load_sql("delete_contract_quarantine"), {"table": table, "cross_row_rules": sorted(CROSS_ROW_RULE_NAMES)})
        con.execute(load_sql("insert_contract_quarantine"), params)
        con.execute(
            f"INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at) "
            f"SELECT $table, f.partition_day, f.source_file, f.source_row, 'contract', f.rule, f.reason, "
            f"CAST(to_json(struct_pack({', '.join(f'{quote_identifier(n)} := h.{quote_identifier(n)}' for n in contract.field_names)})) AS VARCHAR), current_timestamp "
            f"FROM cross_failures f JOIN new_held h USING ({lineage}) ORDER BY {lineage}",
            params,
        )
        con.execute("DELETE FROM internal.pending_days WHERE table_name = $table", params)
        con.execute(load_sql("upsert_staging_state"), {"table": table, "checked": checked})
    days = con.execute(load_sql("count_staged_days").format(staged=contract.staged_table), params | {"days": pending}).fetchall()
    by_rule = dict(Counter(dict(con.execute(
        "SELECT rule, count(*) FROM quarantine WHERE source_table = $table AND stage = 'contract' "
        "AND partition_day IN (SELECT partition_day FROM pending) GROUP BY ALL", params).fetchall())))
    preview = con.execute(
        "SELECT CAST(partition_day AS VARCHAR) AS partition_day, source_file, source_row, rule, reason FROM quarantine "
        "WHERE source_table = $table AND stage = 'contract' AND partition_day IN (SELECT partition_day FROM pending) "
        "ORDER BY partition_day, source_file, source_row LIMIT 10", params).pl()
    return StageResult(table, [(str(d), r, s, q) for d, r, s, q in days], by_rule, True, released, held_back, preview)


def _build_candidates(con: duckdb.DuckDBPyConnection, table: str, files: list[ArchivedFile]) -> None:
    """Temp table ``candidates``: every row of ``files`` through the contract SQL."""
    contract = CONTRACTS[table]
    statements: list[tuple[str, dict[str, object]]] = []
    json_frames, csv_frames, broken = [], [], []
    parquet_groups: dict[tuple, list[ArchivedFile]] = {}
    for f in files:
        if f.suffix in JSON_SUFFIXES:
            json_frames.append(read_json_lines(f))
        elif f.suffix in CSV_SUFFIXES:
            try:
                csv_frames.append(read_csv(f))
            except Exception as exc:  # noqa: BLE001 - an unreadable file is one quarantined row
                broken.append(unreadable(f, f"{type(exc).__name__}: {exc}"))
        elif f.suffix in PARQUET_SUFFIXES:
            try:
                parquet_groups.setdefault(parquet_columns(con, f), []).append(f)
            except duckdb.Error as exc:
                broken.append(unreadable(f, f"{type(exc).__name__}: {exc}"))
        else:
            broken.append(unreadable(f, f"unsupported file type {f.suffix}"))
    json_all = pl.concat(json_frames + broken) if (json_frames or broken) else None
    if json_all is not None and json_all.height:
        statements.append((candidate_select(contract, Source("json", "json_rows")), {"json_rows": as_batches(json_all)}))
    if csv_frames:
        csv_all = pl.concat(csv_frames, how="diagonal")
        if csv_all.height:
            columns = tuple((c, "VARCHAR") for c in csv_all.columns if not c.startswith("__"))
            statements.append((candidate_select(contract, Source("text", "csv_rows", columns)), {"csv_rows": as_batches(csv_all)}))
    for columns, group in parquet_groups.items():
        statements.append((candidate_select(contract, Source("native", parquet_relation(group, columns), columns)), {}))
    first = True
    for sql, frames in statements:
        for name, frame in frames.items():
            con.register(name, frame)
        try:
            if first:
                con.execute(f"CREATE OR REPLACE TEMP TABLE candidates AS {sql}")
                first = False
            else:
                con.execute(f"INSERT INTO candidates {sql}")
        finally:
            for name in frames:
                con.unregister(name)
    if first:  # nothing landed on the pending days (files removed): an empty candidate set
        fields = ", ".join(f"CAST(NULL AS {f.type}) AS {quote_identifier(f.name)}" for f in contract.fields)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE candidates AS SELECT CAST(NULL AS DATE) AS partition_day, CAST(NULL AS VARCHAR) AS source_file, "
            f"CAST(NULL AS BIGINT) AS source_row, {fields}, CAST(NULL AS VARCHAR) AS __rule, CAST(NULL AS VARCHAR) AS __reason, "
            "CAST(NULL AS VARCHAR) AS __record LIMIT 0"
        )


def _registration_rules(con: duckdb.DuckDBPyConnection) -> None:
    """Apply ``contracts.registration`` to the experiment candidates that passed so far."""
    rows = con.execute(
        "SELECT partition_day, source_file, source_row, CAST(arms AS VARCHAR), control_arm, CAST(guardrails AS VARCHAR), "
        "CAST(metric_caps AS VARCHAR) FROM candidates WHERE __rule IS NULL"
    ).fetchall()
    failures = []
    for day, name, row, arms, control, guardrails, caps in rows:
        problems = registration_problems(arms, control, guardrails, caps)
        if problems:
            failures.append((day, name, row, problems[0][0], "; ".join(f"{r}: {why}" for r, why in problems)))
    if not failures:
        return
    batch = pl.DataFrame(
        failures, schema={"partition_day": pl.Date, "source_file": pl.String, "source_row": pl.Int64, "rule": pl.String, "reason": pl.String},
        orient="row",
    )
    contract = CONTRACTS["experiments"]
    packed = ", ".join(f"{quote_identifier(n)} := c.{quote_identifier(n)}" for n in contract.field_names)
    con.register("registration_failures", batch)
    try:
        con.execute(
            f"UPDATE candidates c SET __rule = r.rule, __reason = r.reason, __record = CAST(to_json(struct_pack({packed})) AS VARCHAR) "
            "FROM registration_failures r WHERE c.partition_day = r.partition_day AND c.source_file = r.source_file "
            "AND c.source_row = r.source_row"
        )
    finally:
        con.unregister("registration_failures")


def _cross_row_failures(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Temp table ``cross_failures``: per failing subject row, its first rule and every reason."""
    contract = CONTRACTS[table]
    key = ", ".join(quote_identifier(k) for k in contract.key)
    queries = [("duplicate_key", load_sql("find_duplicate_keys").format(key=key, key_names=", ".join(contract.key)))]
    queries += [(rule, load_sql(name)) for rule, name in CROSS_ROW_RULES.get(table, ())]
    union = " UNION ALL ".join(
        f"SELECT partition_day, source_file, source_row, {order} AS rule_order, '{rule}' AS rule, reason FROM ({sql})"
        for order, (rule, sql) in enumerate(queries)
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE cross_failures AS "
        "SELECT partition_day, source_file, source_row, arg_min(rule, rule_order) AS rule, "
        "string_agg(rule || ': ' || reason, '; ' ORDER BY rule_order) AS reason "
        f"FROM ({union}) GROUP BY partition_day, source_file, source_row"
    )
