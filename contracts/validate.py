"""Contract validation of one partition of one landing table.

Every raw row ends in exactly one of two places: the staged rows or the quarantine rows
(with the first rule it broke and every reason found). Three layers, in order:

1. parsing (SQL): the record is a JSON object; each field is present when required and
   casts to its type; the event time falls on the partition's UTC day;
2. domain rules (pandera models in ``contracts.tables``, plus the registration structure
   of experiments: arms, allocations, control arm, guardrails);
3. cross-row rules (SQL against the candidate rows and the already staged tables): keys
   unique within and across partitions, references to registered experiments and arms,
   registration before assignment, assignment before outcome.
"""

from __future__ import annotations

import json
import math
from typing import NamedTuple

import duckdb
import pandera.polars as pa
import polars as pl

from contracts.tables import CONTRACTS, EXPERIMENT_DEFAULTS, METRICS, TableContract
from sql import load_sql

LINEAGE = ["source_file", "source_row"]
QUARANTINE_COLUMNS = ["source_file", "source_row", "rule", "reason", "record"]


class ValidationResult(NamedTuple):
    """Staged rows (lineage + typed fields) and quarantine rows (lineage, rule, reason, record)."""

    staged: pl.DataFrame
    quarantined: pl.DataFrame


def typed_select_sql(contract: TableContract) -> str:
    """SELECT over ``raw_records`` that extracts and casts every field of ``contract``.

    Identifiers come only from the contract's fixed field list; the table name and day are
    bound as parameters ``$table`` and ``$day``. Each field gives ``<name>__text`` (the value
    as text, JSON text for nested values) and ``<name>`` (cast to its type, NULL when the
    cast fails).
    """
    paths = "[" + ", ".join(f"'$.\"{f.name}\"'" for f in contract.fields) + "]"
    cols = []
    for i, f in enumerate(contract.fields, start=1):
        text = f"v[{i}]"
        if f.sql_type in ("BIGINT", "INTEGER"):
            as_double = f"TRY_CAST({text} AS DOUBLE)"
            typed = f"CASE WHEN {as_double} = round({as_double}) AND abs({as_double}) < 9e15 THEN CAST({as_double} AS {f.sql_type}) END"
        elif f.sql_type in ("VARCHAR", "JSON"):
            typed = text
        else:
            typed = f"TRY_CAST({text} AS {f.sql_type})"
        cols.append(f'{text} AS "{f.name}__text"')
        cols.append(f'{typed} AS "{f.name}"')
    return load_sql("select_raw_partition").format(paths=paths, field_columns=",\n    ".join(cols))


def validate_partition(con: duckdb.DuckDBPyConnection, table: str, day: str) -> ValidationResult:
    """Validate the raw rows of ``table`` landed on ``day`` (``YYYY-MM-DD``).

    Args:
        con: an open warehouse connection (reads ``raw_records`` and staged tables).
        table: a landing table name from ``contracts.tables.CONTRACTS``.
        day: the partition's UTC day.

    Returns:
        ``ValidationResult``; ``len(staged) + len(quarantined)`` equals the number of raw
        rows of the partition.

    Raises:
        KeyError: unknown table.
    """
    contract = CONTRACTS[table]
    frame = con.execute(typed_select_sql(contract), {"table": table, "day": day}).pl()
    frame = _apply_defaults(contract, frame)
    if frame.height == 0:
        return ValidationResult(frame.select(LINEAGE + contract.field_names), _quarantine_frame([]))
    failures: dict[int, list[tuple[str, str]]] = {}

    def fail(row_index: int, rule: str, reason: str) -> None:
        failures.setdefault(row_index, []).append((rule, reason))

    _parse_failures(contract, frame, day, fail)
    if table == "experiments":
        _registration_failures(frame, fail)
    _model_failures(contract, frame, failures, fail)
    _cross_row_failures(con, contract, frame, day, failures, fail)

    bad = pl.Series("bad", [i in failures for i in range(frame.height)], dtype=pl.Boolean)
    staged = frame.filter(~bad).select(LINEAGE + contract.field_names)
    rows = []
    records = frame.get_column("record").to_list()
    files = frame.get_column("source_file").to_list()
    numbers = frame.get_column("source_row").to_list()
    for i in sorted(failures):
        found = failures[i]
        rows.append(
            {
                "source_file": files[i],
                "source_row": numbers[i],
                "rule": found[0][0],
                "reason": "; ".join(f"{rule}: {reason}" for rule, reason in found),
                "record": records[i],
            }
        )
    return ValidationResult(staged, _quarantine_frame(rows))


def _quarantine_frame(rows: list[dict]) -> pl.DataFrame:
    schema = {"source_file": pl.String, "source_row": pl.Int64, "rule": pl.String, "reason": pl.String, "record": pl.String}
    return pl.DataFrame(rows, schema=schema)


def _apply_defaults(contract: TableContract, frame: pl.DataFrame) -> pl.DataFrame:
    if contract.name != "experiments":
        return frame
    exprs = []
    for name, value in EXPERIMENT_DEFAULTS.items():
        if isinstance(value, float):
            exprs.append(pl.col(name).fill_null(pl.when(pl.col(f"{name}__text").is_null()).then(value)))
        else:
            exprs.append(pl.col(name).fill_null(pl.lit(value)))
    return frame.with_columns(exprs)


def _parse_failures(contract: TableContract, frame: pl.DataFrame, day: str, fail) -> None:
    objects = frame.get_column("is_object").cast(pl.Boolean)
    records = frame.get_column("record").to_list()
    for i, ok in enumerate(objects.to_list()):
        if not ok:
            record = records[i] or ""
            if record.startswith("unreadable file: "):
                fail(i, "unreadable_file", record.removeprefix("unreadable file: "))
            else:
                fail(i, "malformed_record", "not a JSON object")
    for f in contract.fields:
        text = frame.get_column(f"{f.name}__text")
        typed = frame.get_column(f.name)
        if f.required and not (contract.name == "experiments" and f.name in EXPERIMENT_DEFAULTS):
            for i in (text.is_null() & objects).arg_true().to_list():
                fail(i, "missing_field", f"required field {f.name} is missing or null")
        for i in (text.is_not_null() & typed.is_null()).arg_true().to_list():
            fail(i, "bad_type", f"{f.name}={text[i]!r} is not a valid {f.sql_type}")
    event = frame.get_column(contract.event_time)
    event_day = event.dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%d")
    for i in (event.is_not_null() & (event_day != day)).arg_true().to_list():
        fail(i, "wrong_partition", f"{contract.event_time} falls on {event_day[i]} UTC, not on the partition day {day}")


def _registration_failures(frame: pl.DataFrame, fail) -> None:
    """Structure of a registration: arms, allocations, control arm, guardrails, caps."""
    columns = ["arms", "control_arm", "primary_metric", "baseline_sd", "guardrails", "metric_caps"]
    for i, row in enumerate(frame.select(columns).iter_rows(named=True)):
        if row["arms"] is None:
            continue
        try:
            arms = json.loads(row["arms"])
            names = [a["name"] for a in arms]
            raw_shares = [a.get("allocation") for a in arms]
            # an aggregate export may declare no allocation at all (every share null: unknown)
            unknown = all(s is None for s in raw_shares)
            shares = [] if unknown else [float(s) for s in raw_shares]
        except (TypeError, KeyError, ValueError, AttributeError, json.JSONDecodeError):
            fail(i, "bad_arms", "arms must be a list of {name, payload, allocation}")
            continue
        if len(names) < 2 or len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
            fail(i, "bad_arms", f"arms need at least two distinct non-empty names, got {names}")
        if not unknown and (not all(math.isfinite(s) and s > 0 for s in shares) or abs(sum(shares) - 1.0) > 1e-6):
            fail(i, "bad_allocation", f"allocations must be positive and sum to 1 (or all null: unknown), got {raw_shares}")
        if row["control_arm"] is not None and row["control_arm"] not in names:
            fail(i, "unknown_control_arm", f"control_arm {row['control_arm']!r} is not one of the arms {names}")
        if row["primary_metric"] not in (None, "success") and row["baseline_sd"] is None:
            fail(i, "missing_field", f"baseline_sd is required for the continuous metric {row['primary_metric']}")
        try:
            guardrails = json.loads(row["guardrails"] or "[]")
            for g in guardrails:
                ok = g["metric"] in METRICS and g["direction"] in ("increase", "decrease")
                if not ok or not (math.isfinite(float(g["margin"])) and float(g["margin"]) > 0):
                    raise ValueError(g)
        except (TypeError, KeyError, ValueError, json.JSONDecodeError):
            fail(i, "bad_guardrails", f"guardrails must be a list of {{metric, direction, margin > 0}}, got {row['guardrails']}")
        try:
            caps = json.loads(row["metric_caps"] or "{}")
            if not isinstance(caps, dict) or any(
                k not in ("time_minutes", "tokens") or not float(v) > 0 for k, v in caps.items()
            ):
                raise ValueError(caps)
        except (TypeError, ValueError, json.JSONDecodeError):
            fail(i, "bad_metric_caps", f"metric_caps must map time_minutes/tokens to a cap > 0, got {row['metric_caps']}")


def _model_failures(contract: TableContract, frame: pl.DataFrame, failures: dict, fail) -> None:
    """Pandera domain rules on the rows that parsed."""
    parsed = [i for i in range(frame.height) if i not in failures]
    if not parsed:
        return
    subset = frame[parsed].select(contract.field_names)
    try:
        contract.model.validate(subset, lazy=True)
    except pa.errors.SchemaErrors as errors:
        cases = errors.failure_cases
        for case in cases.iter_rows(named=True):
            index = case.get("index")
            column = case.get("column") or contract.model.__name__
            check = str(case["check"])
            if index is None:  # a schema-level failure (e.g. wrong dtype) hits every row
                for i in parsed:
                    fail(i, "schema", f"{column}: {check}")
                continue
            if column == contract.model.__name__:  # a row-level check: "name: explanation"
                rule, _, explanation = check.partition(": ")
                fail(parsed[int(index)], rule, explanation or check)
                continue
            rule = f"{column}:{check}"
            fail(parsed[int(index)], rule, f"value {case['failure_case']!r} fails {case['check']}")


def _cross_row_failures(con, contract: TableContract, frame: pl.DataFrame, day: str, failures: dict, fail) -> None:
    """Key uniqueness and references, against candidates that passed so far."""
    ok = [i for i in range(frame.height) if i not in failures]
    candidate = frame[ok].with_columns(pl.Series("row_index", ok, dtype=pl.Int64))
    con.register("candidate", candidate.select(["row_index", *LINEAGE, *contract.field_names]))
    try:
        key = ", ".join(f'"{k}"' for k in contract.key)
        sql = load_sql("find_duplicate_keys").format(key=key, staged=f"staged_{contract.name}")
        for row_index, where in con.execute(sql, {"day": day}).fetchall():
            fail(row_index, "duplicate_key", f"({', '.join(contract.key)}) already staged {where}; later records are refused")
        for name, rule in REFERENCE_RULES.get(contract.name, ()):
            for row_index, reason in con.execute(load_sql(name)).fetchall():
                fail(row_index, rule, reason)
    finally:
        con.unregister("candidate")


# Reference rules per table: (SQL file returning (row_index, reason), rule name).
REFERENCE_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "assignments": (
        ("find_unregistered_assignments", "unknown_experiment"),
        ("find_undeclared_assignment_arms", "arm_not_declared"),
        ("find_assignments_before_registration", "assigned_before_registration"),
    ),
    "outcomes": (("find_outcomes_before_assignment", "outcome_before_assignment"),),
    "experiment_events": (("find_unregistered_experiment_events", "unknown_experiment"),),
    "arm_snapshots": (("find_undeclared_snapshot_arms", "arm_not_declared"),),
}
