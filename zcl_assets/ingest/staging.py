"""Staging: the archived files of the changed days of a table to staged rows and quarantine.

One pass per table and run, over its pending days (or those of them a run asks for) at once:

1. **Candidates.** Every archived file of those days is read (``readers``) and run through the
   generated contract SQL (``contracts.validate``): typed fields, and for a row breaking a
   row-level rule its rule, reasons and record (:func:`file_candidates`; the engine computes
   them, ``zcl_assets.engine.Engine.file_candidates``, so on Spark its executors). Experiments
   also get the registration structure checks (``contracts.registration``).
2. **Cross-row rules** over the *subject*: the candidates that passed, and the staged and held
   rows of other days that a change can affect, found by key lookups: rows with the key of a
   changed row (a duplicate key may move between days) and rows whose reference changed in
   the tables the rules read (``DEPENDENCIES``; their changes come from the change log,
   ``changelog``). Keys are unique (the first row by day, file and row is kept) and references
   resolve against the other staged tables as they are now, so loading, correcting and
   reloading gives the same tables as a fresh load of the corrected files; no rule re-reads
   the whole table.
3. **One transaction** replaces the rows of those days, moves subject rows of other days
   between ``staged_<table>`` and ``internal.held_<table>`` (contract-valid rows held back by
   a cross-row rule: an outcome whose session lands later is staged then; a staged row that
   passes again stays as it is, unwritten and unlogged), rewrites the
   quarantine rows of the days and of the re-checked rows, records the keys it changed in the
   change log, and clears the days from the queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

import duckdb
import polars as pl

from contracts.registration import registration_problems
from contracts.schema import quote_identifier, sql_literal
from contracts.tables import CONTRACTS
from contracts.validate import Source, candidate_select, redacted_in_place
from sql import load_sql
from zcl_assets.engine import DUCKDB, Engine
from zcl_assets.ingest import changelog
from zcl_assets.ingest.readers import (
    CSV_SUFFIXES,
    JSON_SUFFIXES,
    PARQUET_SUFFIXES,
    ArchivedFile,
    as_batches,
    count_rows,
    parquet_relation,
    parquet_schema,
    parquet_table,
    read_csv,
    read_json_lines,
    unreadable,
)
from zcl_assets.ingest.versions import code_fingerprint
from zcl_assets.privacy.policy import PrivacyPolicy, current_policy
from zcl_assets.privacy.pseudonyms import register_function as register_pseudonym_function
from zcl_assets.privacy.redaction import Redactor, redact_json, redact_record
from zcl_assets.warehouse import matching_rows, transaction

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

DEPENDENCIES: dict[str, dict[str, str]] = {
    "experiments": {},
    "experiment_events": {"experiments": "experiment_id"},
    "sessions": {},
    "assignments": {"experiments": "experiment_id"},
    "outcomes": {"sessions": "session_id", "assignments": "session_id"},
    "admission_events": {},
    "arm_snapshots": {"experiments": "experiment_id"},
}
"""Per table, the staged tables its cross-row rules read and the column of its own rows that
refers to them: a change of that key there re-checks the rows here that carry it."""

STAGING_DEPENDS_ON: dict[str, tuple[str, ...]] = {t: tuple(deps) for t, deps in DEPENDENCIES.items()}
"""The staged tables each table's cross-row rules read (staged before it)."""

CROSS_ROW_RULE_NAMES: frozenset[str] = frozenset(
    {"duplicate_key"} | {rule for rules in CROSS_ROW_RULES.values() for rule, _ in rules}
)

_LINEAGE = ("partition_day", "source_file", "source_row")


class StageResult(NamedTuple):
    """What one staging pass did for one table.

    Attributes:
        table: the landing table.
        days: per staged day ``(day, raw rows, staged rows, quarantined rows)``.
        by_rule: quarantined rows of those days by rule.
        rechecked: the cross-row rules ran (days to stage or a changed dependency).
        released: rows of other days moved from held to staged.
        held_back: rows of other days moved from staged to held.
        preview: up to 10 quarantined rows of this pass (lineage, rule, reason).
        engine: the engine that computed the candidate rows (``duckdb`` when the chosen engine
            left them to this process, or there were none).
    """

    table: str
    days: list[tuple[str, int, int, int]]
    by_rule: dict[str, int]
    rechecked: bool
    released: int
    held_back: int
    preview: pl.DataFrame
    engine: str = DUCKDB.name

    @property
    def staged(self) -> int:
        return sum(d[2] for d in self.days)

    @property
    def quarantined(self) -> int:
        return sum(d[3] for d in self.days)


def held_table(table: str) -> str:
    """Name of the table of contract-valid rows held back by a cross-row rule."""
    return CONTRACTS[table].held_table


def rules_fingerprint(table: str) -> str:
    """Fingerprint of the cross-row rules of ``table``: new rules re-check the whole table once."""
    texts = [load_sql("find_duplicate_keys"), *(load_sql(name) for _, name in CROSS_ROW_RULES.get(table, ()))]
    return code_fingerprint(table, *texts)


def pending_days(con: duckdb.DuckDBPyConnection, table: str, days: Sequence[str] | None = None) -> list[str]:
    """The days of ``table`` waiting to be staged (those among ``days`` when given)."""
    pending = [d for (d,) in con.execute(load_sql("select_pending_days"), {"table": table}).fetchall()]
    return pending if days is None else [d for d in pending if d in set(days)]


def stage_table(con: duckdb.DuckDBPyConnection, table: str, days: Sequence[str] | None = None,
                engine: Engine = DUCKDB) -> StageResult:
    """Stage the pending days of ``table`` (those among ``days`` when given) and re-check what
    their changes and the changes of its dependencies touch (see the module doc); ``engine``
    computes the candidate rows.

    Raises:
        KeyError: unknown table.
    """
    contract = CONTRACTS[table]
    fingerprint = rules_fingerprint(table)
    changes = changelog.changes_since(con, contract.staged_table, fingerprint) if DEPENDENCIES[table] else None
    pending = pending_days(con, table, days)
    if not pending and not (changes and changelog.has_changes(con, changes)):
        return StageResult(table, [], {}, False, 0, 0, pl.DataFrame())
    files = [ArchivedFile(day, name, Path(path)) for day, name, path in con.execute(
        load_sql("select_pending_files"), {"table": table}).fetchall() if day in set(pending)]
    computed_by = _build_candidates(con, table, files, engine)
    if table == "experiments":
        _registration_rules(con)
    con.execute("CREATE OR REPLACE TEMP TABLE pending AS SELECT CAST(unnest($days::VARCHAR[]) AS DATE) AS partition_day",
                {"days": pending})
    _subject(con, table, changes)
    _cross_row_failures(con, table)
    released, held_back = _moves(con, table)
    _keep_passing_rows(con)
    with transaction(con):
        _record_changes(con, table)
        _replace_rows(con, table)
        _replace_quarantine(con, table)
        con.execute("DELETE FROM internal.pending_days WHERE table_name = $table AND partition_day IN (SELECT partition_day FROM pending)",
                    {"table": table})
        con.execute(load_sql("upsert_staging_state"), {"table": table, "checked": fingerprint})
        if changes is not None:
            changelog.advance(con, contract.staged_table, fingerprint, changes)
    return _result(con, table, pending, released, held_back)._replace(engine=computed_by)


def _key_columns(table: str) -> str:
    return ", ".join(quote_identifier(k) for k in CONTRACTS[table].key)


def _subject(con: duckdb.DuckDBPyConnection, table: str, changes: changelog.Changes | None) -> None:
    """Temp table ``recheck`` (the staged and held rows of other days a change can affect, each
    with whether it is held) and temp view ``subject`` (the candidates that passed, and those rows)."""
    contract = CONTRACTS[table]
    key = _key_columns(table)
    if changes is not None and changes.full:
        found = [_other_days(table)]
    else:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE changed_keys AS SELECT DISTINCT {key} FROM ("
            f"SELECT {key} FROM candidates WHERE __rule IS NULL "
            f"UNION ALL SELECT {key} FROM {contract.staged_table} WHERE partition_day IN (SELECT partition_day FROM pending) "
            f"UNION ALL SELECT {key} FROM {contract.held_table} WHERE partition_day IN (SELECT partition_day FROM pending))"
        )
        found = [_other_days(table, join=f"SEMI JOIN changed_keys USING ({key})")]
        for column in sorted(set(DEPENDENCIES[table].values())):
            sources = [CONTRACTS[d].staged_table for d, c in DEPENDENCIES[table].items() if c == column]
            found.append(_other_days(table, condition=f"o.{quote_identifier(column)} IN ("
                                     f"SELECT {column} FROM {changes.relation} WHERE list_contains({_text_list(sources)}, source))"))
    # one statement per lookup: in one UNION ALL, DuckDB would read the history they share
    # once, whole, instead of each lookup reading only the rows its keys select
    con.execute(f"CREATE OR REPLACE TEMP TABLE found AS {found[0]}")
    for lookup in found[1:]:
        con.execute(f"INSERT INTO found {lookup}")
    lineage = ", ".join(_LINEAGE)
    con.execute(f"CREATE OR REPLACE TEMP TABLE recheck AS SELECT * FROM found QUALIFY row_number() OVER (PARTITION BY {lineage}) = 1")
    # a view: on a first load every landed row is a candidate, and a copy of them all cost
    # more than the filter each read of the subject repeats
    fields = ", ".join(quote_identifier(f) for f in contract.field_names)
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW subject AS SELECT {lineage}, {fields} FROM candidates WHERE __rule IS NULL "
        f"UNION ALL SELECT {lineage}, {fields} FROM recheck"
    )


def _other_days(table: str, join: str = "", condition: str = "") -> str:
    """The held and staged rows of ``table`` outside the pending days, with ``__held``: all of them,
    or those that ``join`` and ``condition`` (over alias ``o``) select, looked up by
    :func:`~zcl_assets.warehouse.matching_rows`."""
    contract = CONTRACTS[table]
    columns = ", ".join([*_LINEAGE, *(quote_identifier(f) for f in contract.field_names)])
    other = "partition_day NOT IN (SELECT partition_day FROM pending)"
    return " UNION ALL ".join(
        matching_rows(source, f"{join} WHERE o.{other}" + (f" AND {condition}" if condition else ""), f"{columns}, {held} AS __held")
        if join or condition else f"SELECT {columns}, {held} AS __held FROM {source} WHERE {other}"
        for source, held in ((contract.held_table, "true"), (contract.staged_table, "false"))
    )


def _text_list(values: Sequence[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _moves(con: duckdb.DuckDBPyConnection, table: str) -> tuple[int, int]:
    """(held rows of other days now released, staged rows of other days now held back)."""
    lineage = ", ".join(_LINEAGE)
    return con.execute(
        f"SELECT count(*) FILTER (WHERE r.__held AND f.source_row IS NULL), count(*) FILTER (WHERE NOT r.__held AND f.source_row IS NOT NULL) "
        f"FROM recheck r LEFT JOIN cross_failures f USING ({lineage})"
    ).fetchone()


def _keep_passing_rows(con: duckdb.DuckDBPyConnection) -> None:
    """Drop from ``recheck`` the staged rows of other days that pass again: they stay in the staged
    table as they are, neither rewritten nor logged as changed. After a change of a table's rules
    every row of it is re-checked: rewriting them all, and rebuilding every table derived from
    them, made that night take 163 s at 10M sessions (51 s without), or fail."""
    failed = " AND ".join(f"f.{c} = r.{c}" for c in _LINEAGE)
    con.execute(f"CREATE OR REPLACE TEMP TABLE recheck AS SELECT r.* FROM recheck r "
                f"WHERE r.__held OR EXISTS (SELECT 1 FROM cross_failures f WHERE {failed})")


def _record_changes(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Append the keys of the staged rows this pass removes or writes to the change log."""
    contract = CONTRACTS[table]
    names = set(contract.field_names)
    keys = ", ".join(
        f"{quote_identifier(k) if k in names else 'NULL'} AS {k}" for k in ("experiment_id", "session_id")
    ) + ", partition_day AS day"
    changelog.record(
        con, contract.staged_table,
        f"SELECT {keys} FROM {contract.staged_table} WHERE partition_day IN (SELECT partition_day FROM pending) "
        f"UNION ALL SELECT {keys} FROM subject",
    )


def _replace_rows(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """The staged and held rows of the pending days and of the re-checked rows, replaced."""
    contract = CONTRACTS[table]
    fields = ", ".join(quote_identifier(f) for f in contract.field_names)
    lineage = ", ".join(_LINEAGE)
    rechecked = bool(con.execute("SELECT count(*) FROM recheck").fetchone()[0])
    for target in (contract.staged_table, contract.held_table):
        con.execute(f"DELETE FROM {target} WHERE partition_day IN (SELECT partition_day FROM pending)")
        if rechecked:  # rows of other days whose verdict is taken again
            con.execute(
                f"DELETE FROM {target} t USING recheck r WHERE r.partition_day = t.partition_day "
                f"AND r.source_file = t.source_file AND r.source_row = t.source_row"
            )
    con.execute(f"INSERT INTO {contract.staged_table} BY NAME SELECT {lineage}, {fields} FROM subject ANTI JOIN cross_failures USING ({lineage})")
    con.execute(f"INSERT INTO {contract.held_table} BY NAME SELECT {lineage}, {fields} FROM subject SEMI JOIN cross_failures USING ({lineage}) "
                f"ORDER BY {lineage}")


def _replace_quarantine(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """The contract quarantine rows of the pending days and of the re-checked rows, rewritten."""
    contract = CONTRACTS[table]
    params = {"table": table}
    con.execute(load_sql("delete_contract_quarantine"), params | {"cross_row_rules": sorted(CROSS_ROW_RULE_NAMES)})
    con.execute(load_sql("insert_contract_quarantine"), params)
    packed = ", ".join(f"{quote_identifier(n)} := s.{quote_identifier(n)}" for n in contract.field_names)
    con.execute(
        f"INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at) "
        f"SELECT $table, f.partition_day, f.source_file, f.source_row, 'contract', f.rule, f.reason, "
        f"CAST(to_json(struct_pack({packed})) AS VARCHAR), current_timestamp "
        f"FROM cross_failures f JOIN subject s USING ({', '.join(_LINEAGE)}) ORDER BY {', '.join(_LINEAGE)}",
        params,
    )


def _result(con: duckdb.DuckDBPyConnection, table: str, pending: list[str], released: int, held_back: int) -> StageResult:
    contract = CONTRACTS[table]
    params = {"table": table}
    days = con.execute(load_sql("count_staged_days").format(staged=contract.staged_table), params | {"days": pending}).fetchall()
    by_rule = dict(Counter(dict(con.execute(
        "SELECT rule, count(*) FROM quarantine WHERE source_table = $table AND stage = 'contract' "
        "AND partition_day IN (SELECT partition_day FROM pending) GROUP BY ALL", params).fetchall())))
    preview = con.execute(
        "SELECT CAST(partition_day AS VARCHAR) AS partition_day, source_file, source_row, rule, reason FROM quarantine "
        "WHERE source_table = $table AND stage = 'contract' AND partition_day IN (SELECT partition_day FROM pending) "
        "ORDER BY partition_day, source_file, source_row LIMIT 10", params).pl()
    return StageResult(table, [(str(d), r, s, q) for d, r, s, q in days], by_rule, True, released, held_back, preview)


class _Batch(NamedTuple):
    """Files read by one statement, and how to build the statement for any subset of them."""

    files: list[ArchivedFile]
    statement: Callable[[list[ArchivedFile]], tuple[str, dict[str, object]]]


def _build_candidates(con: duckdb.DuckDBPyConnection, table: str, files: list[ArchivedFile], engine: Engine = DUCKDB) -> str:
    """Temp table ``candidates``: the candidate rows of ``files`` (:func:`file_candidates`),
    computed by ``engine``: on Spark by its executors, each over its share of the files.
    Returns the name of the engine that computed them."""
    policy = current_policy()
    _create_candidates(con, CONTRACTS[table])
    parts = engine.file_candidates(con, table, files, policy, partial(file_candidates, table=table)) if files else None
    if parts is None:
        file_candidates(con, files, policy, table)
        return DUCKDB.name
    if parts:
        listed = ", ".join(sql_literal(p) for p in parts)
        con.execute(f"INSERT INTO candidates BY NAME SELECT * FROM read_parquet([{listed}])")
    return engine.name


def file_candidates(con: duckdb.DuckDBPyConnection, files: list[ArchivedFile], policy: PrivacyPolicy, table: str) -> None:
    """Temp table ``candidates`` on ``con``: every row of ``files`` through the contract SQL.

    Files are read in as few statements as their formats allow; a statement that fails is
    split into one per file, and a file that still fails is quarantined whole
    (``unreadable_file``, with the engine's message), so no file stops the others. The
    reasons and records of the rows that broke a rule are then redacted under ``policy``
    (``zcl_assets.privacy``). A file's rows depend on that file alone, so any partition of
    the files gives the same rows: Spark's executors run this, each on an in-memory DuckDB
    over its share (``zcl_assets.portability.spark_staging``).
    """
    contract = CONTRACTS[table]
    if policy.pseudonym_key:
        register_pseudonym_function(con, policy.pseudonym_key)
    _create_candidates(con, contract)
    for batch in _read_batches(con, contract, files, policy):
        _insert_isolated(con, contract, batch, policy)
    _redact_candidates(con, contract, policy.redactor)


def _create_candidates(con: duckdb.DuckDBPyConnection, contract) -> None:
    fields = ", ".join(f"CAST(NULL AS {f.type}) AS {quote_identifier(f.name)}" for f in contract.fields)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE candidates AS SELECT CAST(NULL AS DATE) AS partition_day, CAST(NULL AS VARCHAR) AS source_file, "
        f"CAST(NULL AS BIGINT) AS source_row, {fields}, CAST(NULL AS VARCHAR) AS __rule, CAST(NULL AS VARCHAR) AS __reason, "
        "CAST(NULL AS VARCHAR) AS __record, CAST(NULL AS BOOLEAN) AS __sensitive LIMIT 0"
    )


def _read_batches(con: duckdb.DuckDBPyConnection, contract, files: list[ArchivedFile], policy) -> list[_Batch]:
    """The statements that read ``files``: the JSON Lines (with the files no reader takes)
    together, CSV and Parquet by their columns, so that a file's candidate rows (a refused
    row's record names the file's own columns) never depend on the other files staged with it."""
    json_frames: dict[ArchivedFile, pl.DataFrame] = {}
    batches: list[_Batch] = []
    csv_groups: dict[tuple[str, ...], dict[ArchivedFile, pl.DataFrame]] = {}
    parquet_groups: dict[tuple, list[ArchivedFile]] = {}
    for f in files:
        try:
            if f.suffix in JSON_SUFFIXES:
                json_frames[f] = read_json_lines(f)
            elif f.suffix in CSV_SUFFIXES:
                frame = read_csv(f)
                csv_groups.setdefault(tuple(frame.columns), {})[f] = frame
            elif f.suffix in PARQUET_SUFFIXES:
                schema = parquet_schema(con, f)
                if schema.own_reader:
                    batches.append(_Batch([f], lambda fs: _parquet_table_statement(con, contract, fs[0], policy)))
                else:
                    parquet_groups.setdefault((schema.columns, schema.repeated), []).append(f)
            else:
                json_frames[f] = unreadable(f, f"unsupported file type {f.suffix}")
        except Exception as exc:  # noqa: BLE001 - an unreadable file is one quarantined row
            _raise_if_out_of_resources(exc)
            json_frames[f] = unreadable(f, f"{type(exc).__name__}: {exc}")
    if json_frames:
        batches.append(_Batch(list(json_frames), lambda fs: _frame_statement(contract, [json_frames[f] for f in fs], "json", policy)))
    for frames in csv_groups.values():
        batches.append(_Batch(list(frames), lambda fs, g=frames: _frame_statement(contract, [g[f] for f in fs], "text", policy)))
    for (columns, repeated), group in parquet_groups.items():
        batches.append(_Batch(group, lambda fs, c=columns, r=repeated: (
            candidate_select(contract, Source("native", parquet_relation(fs, r), c, errors=True), policy), {})))
    return batches


def _frame_statement(contract, frames: list[pl.DataFrame], shape: str, policy) -> tuple[str, dict[str, object]]:
    """The candidate SQL over stacked JSON Lines (``json``) or CSV (``text``, of the same columns) frames."""
    stacked = pl.concat(frames, how="vertical_relaxed")
    if shape == "json":
        return candidate_select(contract, Source("json", "json_rows"), policy), {"json_rows": as_batches(stacked)}
    columns = tuple((c, "VARCHAR") for c in stacked.columns if not c.startswith("__"))
    return candidate_select(contract, Source("text", "csv_rows", columns, errors=True), policy), {"csv_rows": as_batches(stacked)}


def _parquet_table_statement(con: duckdb.DuckDBPyConnection, contract, file: ArchivedFile, policy) -> tuple[str, dict[str, object]]:
    """A Parquet file holding a ``filename`` or ``file_row_number`` column, read by pyarrow."""
    table = parquet_table(file)
    con.register("parquet_rows", table)
    try:
        described = con.execute("DESCRIBE SELECT * FROM parquet_rows").fetchall()
    finally:
        con.unregister("parquet_rows")
    columns = tuple((name, column_type) for name, column_type, *_ in described if not name.startswith("__"))
    return candidate_select(contract, Source("native", "parquet_rows", columns, errors=True), policy), {"parquet_rows": table}


def _insert_isolated(con: duckdb.DuckDBPyConnection, contract, batch: _Batch, policy) -> None:
    """Insert a batch's candidates; on failure, file by file, and quarantine a file that fails alone."""
    try:
        _insert(con, *batch.statement(batch.files))
        return
    except Exception as exc:  # noqa: BLE001 - one file must not stop the others
        _raise_if_out_of_resources(exc)
        error = exc
    if len(batch.files) > 1:
        for f in batch.files:
            _insert_isolated(con, contract, _Batch([f], batch.statement), policy)
        return
    (f,) = batch.files
    rows = unreadable(f, f"{type(error).__name__}: {error}", count_rows(con, f))
    _insert(con, candidate_select(contract, Source("json", "json_rows"), policy), {"json_rows": as_batches(rows)})


def _raise_if_out_of_resources(exc: Exception) -> None:
    """Raise ``exc`` again when the process, not the file, failed (memory): a file is never
    quarantined for what its reader lacked."""
    if isinstance(exc, (MemoryError, duckdb.OutOfMemoryException)):
        raise exc


def _insert(con: duckdb.DuckDBPyConnection, sql: str, frames: dict[str, object]) -> None:
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        con.execute(f"INSERT INTO candidates {sql}")
    finally:
        for name in frames:
            con.unregister(name)


def _redact_candidates(con: duckdb.DuckDBPyConnection, contract, redactor: Redactor) -> None:
    """Redact what the candidates may quote of the landed data: the reason and record of a row
    that broke a rule (patterns become placeholders, fields outside the contract lose their
    values) and the free-text and JSON fields of a row that holds a match."""
    names = contract.field_names
    in_place = [f for f in contract.fields if redacted_in_place(f)]
    values = "".join(f", CAST({quote_identifier(f.name)} AS VARCHAR)" for f in in_place)
    rows = con.execute(
        f"SELECT partition_day, source_file, source_row, __reason, __record{values} FROM candidates "
        "WHERE __rule IS NOT NULL OR __sensitive"
    ).fetchall()
    changed = []
    for day, name, row, reason, record, *texts in rows:
        redacted = [redactor.redact(t) if f.type == "VARCHAR" else redact_json(t, redactor) for f, t in zip(in_place, texts)]
        new = (redactor.redact(reason), redact_record(record, names, redactor), *redacted)
        if new != (reason, record, *texts):
            changed.append((day, name, row, *new))
    if not changed:
        return
    schema = {"partition_day": pl.Date, "source_file": pl.String, "source_row": pl.Int64, "reason": pl.String, "record": pl.String}
    batch = pl.DataFrame(changed, schema=schema | {f"v{i}": pl.String for i in range(len(in_place))}, orient="row")
    assignments = "".join(f", {quote_identifier(f.name)} = CAST(r.v{i} AS {f.type})" for i, f in enumerate(in_place))
    con.register("redacted_batch", batch)
    try:
        con.execute(
            f"UPDATE candidates c SET __reason = r.reason, __record = r.record{assignments} FROM redacted_batch r "
            "WHERE c.partition_day = r.partition_day AND c.source_file = r.source_file AND c.source_row = r.source_row"
        )
    finally:
        con.unregister("redacted_batch")


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
