"""The ZCL schema's rows as landing records (docs/landing.md), and nothing reshaped beyond that.

* ``zcl_experiments`` -> ``experiments``: a registration built by the export importer's own
  code (:func:`~zcl_assets.importers.ab_export.registration_record`, same defaults, same
  refusals), arms ``control`` and ``treatment`` with the row's JSONB payloads, registered at
  ``started_at``; and ``experiment_events``: ``active`` at ``started_at``, and ``completed`` or
  ``cancelled`` at ``completed_at`` (a closed status without ``completed_at`` lands without a
  time, and the contract quarantines it, with the reason).
* ``zcl_sessions`` -> ``sessions``; ``experiment_group`` is the delivered arm.
* ``zcl_experiment_assignments`` -> ``assignments``: ``group_name`` is the arm; the unit is the
  session, or its user for an experiment registered with ``randomization_unit: user``.
* ``zcl_outcomes`` -> ``outcomes`` with the evaluator of the session's task type from the
  registration file, else kind ``unknown``.

Every record keeps its source row id as ``source_id`` (an extra column: the pipeline ignores
unknown columns), the key by which a day's corrections are reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from zcl_assets.importers.ab_export import registration_problems, registration_record
from zcl_assets.sources.config import SourceConfig

_UTC = pl.Datetime("us", "UTC")
EXPERIMENT_SCHEMA: dict[str, pl.DataType] = {
    "schema_version": pl.Int64, "experiment_id": pl.String, "org_id": pl.String, "task_type": pl.String, "kind": pl.String,
    "hypothesis": pl.String, "arms": pl.String, "control_arm": pl.String, "primary_metric": pl.String,
    "direction": pl.String, "mde": pl.Float64, "alpha": pl.Float64, "power": pl.Float64, "baseline_mean": pl.Float64,
    "baseline_sd": pl.Float64, "min_samples_per_arm": pl.Int64, "randomization_unit": pl.String,
    "sessions_per_unit": pl.String, "guardrails": pl.String, "metric_caps": pl.String,
    "expected_verified_share": pl.Float64, "registered_at": _UTC, "source_id": pl.String,
}
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "schema_version": pl.Int64, "experiment_id": pl.String, "status": pl.String, "at": _UTC, "reason": pl.String,
    "source_id": pl.String,
}
CLOSED = ("completed", "cancelled")


def registrations(experiments: pl.DataFrame, config: SourceConfig, table: str) -> tuple[pl.DataFrame, dict[str, str]]:
    """(the experiments landing frame with the UTC ``day`` of each, {experiment id: why its
    registration was refused}).

    A refused registration does not land; its assignments then land and are quarantined as
    ``unknown_experiment``, so nothing is lost and the reason is said (by the caller).
    """
    built, refused = [], {}
    for row in experiments.iter_rows(named=True):
        try:
            built.append(_registration(row, config, table))
        except (ValueError, TypeError) as exc:  # the export importer's refusals (an allocation of no arm)
            refused[row["experiment_id"]] = str(exc)
    rows = []
    for record, problem in zip(built, registration_problems(built), strict=True):  # the contract, in one pass
        if problem:
            refused[record["experiment_id"]] = problem
        else:
            rows.append({**{k: record.get(k) for k in EXPERIMENT_SCHEMA}, "registered_at": record["started_at"],
                         "source_id": record["experiment_id"]})
    frame = pl.DataFrame(rows, schema=EXPERIMENT_SCHEMA, orient="row") if rows else pl.DataFrame(schema=EXPERIMENT_SCHEMA)
    return frame.with_columns(pl.col("registered_at").dt.date().alias("day")), refused


def _registration(row: dict, config: SourceConfig, table: str) -> dict:
    """The registration record of one source row (JSON fields as text), not yet checked."""
    eid = row["experiment_id"]
    options = config.options(eid, row["task_type"], row["hypothesis"], row["started_at"])
    payloads = {"control": json.loads(row["control"]), "treatment": json.loads(row["treatment"])}
    record = registration_record(options, Path(table), options.declared_arms, row["started_at"], payloads)
    extra = config.record_fields(eid)
    for key in ("guardrails", "metric_caps"):
        if key in extra and extra[key] is not None:
            extra[key] = json.dumps(extra[key], separators=(",", ":"), sort_keys=True)
    return {**record, "metric_caps": None, "baseline_sd": None, **extra, "started_at": row["started_at"]}


def status_events(experiments: pl.DataFrame) -> pl.DataFrame:
    """``experiment_events``: each experiment ``active`` at its start, then its closing status,
    with the UTC ``day`` each lands in."""
    active = experiments.select(
        pl.lit(1, pl.Int64).alias("schema_version"), "experiment_id", pl.lit("active").alias("status"),
        pl.col("started_at").alias("at"), pl.lit(None, pl.String).alias("reason"))
    closed = experiments.filter(pl.col("status").is_in(CLOSED)).select(
        pl.lit(1, pl.Int64).alias("schema_version"), "experiment_id", "status", pl.col("completed_at").alias("at"),
        pl.when(pl.col("completed_at").is_null()).then(pl.lit("the source row has this status but no completed_at"))
        .otherwise(None).alias("reason"))
    events = pl.concat([active, closed]).with_columns(pl.format("{}:{}", "experiment_id", "status").alias("source_id"))
    started = experiments.select("experiment_id", pl.col("started_at").dt.date().alias("day"))
    # an event without a time lands on its experiment's first day, where the contract refuses it
    return events.cast(EVENT_SCHEMA).join(started, on="experiment_id", how="left").with_columns(
        pl.coalesce(pl.col("at").dt.date(), pl.col("day")).alias("day")).sort("source_id")


def landing_rows(role: str, frame: pl.DataFrame, config: SourceConfig, user_units: set[str]) -> pl.DataFrame:
    """One streamed table's source rows (one UTC day) as landing records, columns in order."""
    if role == "sessions":
        return frame.select("session_id", "org_id", "user_id", "task_type", "model", "started_at", "ended_at",
                            "experiment_id", "delivered_arm", "source_id")
    if role == "assignments":
        unit = pl.when(pl.col("experiment_id").is_in(sorted(user_units))).then(pl.col("user_id")).otherwise(pl.col("session_id"))
        return frame.select("session_id", "experiment_id", "arm", unit.alias("unit_id"), "assigned_at", "source_id")
    task_types = frame.get_column("task_type").unique().to_list()
    evaluators = pl.DataFrame(
        [(t, *_evaluator_fields(config, t)) for t in task_types],
        schema={"task_type": pl.String, "evaluator_id": pl.String, "evaluator_version": pl.String, "evaluator_kind": pl.String},
        orient="row")
    return frame.join(evaluators, on="task_type", how="left", nulls_equal=True, maintain_order="left").select(
        "session_id", "success", "time_minutes", "recorded_at", "evaluator_id", "evaluator_version", "evaluator_kind",
        "source_id")


def _evaluator_fields(config: SourceConfig, task_type: str | None) -> tuple[str, str, str]:
    e = config.evaluator(task_type)
    return e.id, e.version, e.kind


def user_randomized(experiments: pl.DataFrame) -> set[str]:
    """Ids of the registered experiments whose unit is the user."""
    return set(experiments.filter(pl.col("randomization_unit") == "user").get_column("experiment_id").to_list())

