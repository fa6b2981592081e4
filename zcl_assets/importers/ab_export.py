"""Import a generic unit-level A/B export (CSV or Parquet) into ZCL landing files.

The source has one row per unit or visit: unit id, timestamp, assigned group, delivered
variant and a binary outcome (for example Udacity's ``ab_data.csv``:
``user_id,timestamp,group,landing_page,converted``). Source row ``i`` (1 = the first data
row) becomes

* a session ``{experiment_id}:{i}`` (user = unit, ``started_at = ended_at`` = timestamp,
  ``delivered_arm`` = the delivered variant mapped back to an arm name, context fields empty),
* an assignment of that session (arm = the assigned group, ``unit_id`` = unit id,
  ``assigned_at`` = timestamp),
* an outcome of that session (``success`` = the binary outcome, ``recorded_at`` = timestamp,
  evaluator fields from the options),

plus one ``experiments`` registration built from the options (the source has no MDE, alpha,
power, baseline, organization or task type).

The importer writes facts faithfully: it drops nothing. Rows whose assigned group and
delivered variant disagree, repeated units, and rows whose own fields cannot be parsed (a bad
timestamp, a missing unit id, an outcome that is not 0/1/true/false) are all written; the
unparseable values keep their raw text (a missing value becomes null), so the pipeline's
contract validation quarantines them with a reason instead of the row silently vanishing.
A row whose timestamp cannot be parsed lands in the earliest day folder of the import.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from zcl_assets.importers.landing_writer import (
    json_text,
    parse_timestamp,
    read_source,
    safe_name,
    timestamp_text,
    write_landing,
)

_TRUE = ("1", "1.0", "true", "t", "yes", "y")
_FALSE = ("0", "0.0", "false", "f", "no", "n")


@dataclass(frozen=True)
class AbExportSummary:
    """Result of :func:`import_ab_export`."""

    rows_read: int
    records_written: dict[str, int]
    files_written: list[Path]
    experiment_ids: list[str]
    arms: list[str]
    registered_at: str
    mismatched_rows: int
    """rows whose delivered arm differs from the assigned arm (written; quarantined later)"""
    unparseable_rows: int
    """rows with a bad timestamp, missing unit/group or non-binary outcome (written raw)"""


def _to_utc_datetime(value: str | _dt.datetime | _dt.date) -> _dt.datetime:
    if isinstance(value, _dt.datetime):
        dt = value
    elif isinstance(value, _dt.date):
        dt = _dt.datetime(value.year, value.month, value.day)
    else:
        dt = _dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    if dt.tzinfo is None:
        return dt.replace(tzinfo=_dt.timezone.utc)  # naive = UTC by contract
    return dt.astimezone(_dt.timezone.utc)


def iso(dt: _dt.datetime) -> str:
    """ISO 8601 text with ``+00:00`` for an aware or naive (= UTC) datetime."""
    return _to_utc_datetime(dt).isoformat()


def import_ab_export(
    path: str | os.PathLike[str],
    landing_dir: str | os.PathLike[str],
    *,
    experiment_id: str,
    unit_column: str = "user_id",
    timestamp_column: str = "timestamp",
    assigned_column: str = "group",
    delivered_column: str | None = "landing_page",
    outcome_column: str = "converted",
    variant_map: Mapping[str, str] | None = None,
    control_arm: str = "control",
    org_id: str = "default",
    task_type: str = "ab_export",
    mde: float = 0.01,
    alpha: float = 0.05,
    power: float = 0.8,
    baseline_mean: float = 0.5,
    min_samples_per_arm: int = 100,
    randomization_unit: str = "user",
    sessions_per_unit: str = "one",
    hypothesis: str | None = None,
    registered_at: str | _dt.datetime | None = None,
    evaluator_id: str = "ab-export",
    evaluator_version: str = "1",
    evaluator_kind: str = "evaluator",
    allocation: Mapping[str, float] | None = None,
    direction: str = "increase",
) -> AbExportSummary:
    """Import one unit-level A/B export file into ``landing_dir``.

    Writes ``sessions``, ``assignments``, ``outcomes`` (one record per source row each) and
    one ``experiments`` registration, split by UTC day, as
    ``<landing>/<table>/<day>/ab_export-<experiment_id>-<file stem>.jsonl``; importing the
    same file again overwrites those files.

    Options (defaults and why):

    * ``experiment_id`` (required): the source has no experiment id; session ids are
      ``f"{experiment_id}:{row}"`` with the 1-based source row number, so repeated units
      never collide.
    * ``unit_column="user_id"``, ``timestamp_column="timestamp"``,
      ``assigned_column="group"``, ``delivered_column="landing_page"``,
      ``outcome_column="converted"``: the column names of the common Udacity/Kaggle export.
      ``delivered_column=None`` means delivery equals assignment.
    * ``variant_map=None``: arm name -> delivered-variant value (ab_data.csv:
      ``{"control": "old_page", "treatment": "new_page"}``). Delivered values are mapped back
      to arm names; values not in the map (or all, when no map is given) are kept verbatim
      as ``delivered_arm``, so they mismatch the assignment downstream.
    * ``control_arm="control"``: the usual control label.
    * ``org_id="default"``, ``task_type="ab_export"``: the source names neither.
    * ``mde=0.01``: one percentage point, absolute, on the success rate (a typical
      conversion-rate MDE); ``alpha=0.05``, ``power=0.8``: conventional.
    * ``baseline_mean=0.5``: the conservative binary baseline (p(1-p) is largest at 0.5, so
      the planned sample is never too small); the source has no registered baseline.
    * ``min_samples_per_arm=100``: a floor for the power analysis, not a target.
    * ``randomization_unit="user"``: these exports randomize visitors.
    * ``sessions_per_unit="one"``: one row per unit is the export's promise, so a repeated
      unit is a defect the pipeline quarantines.
    * ``hypothesis=None``: a text naming the file, arms and outcome is generated.
    * ``registered_at=None``: 00:00:00 UTC of the UTC day of the earliest parseable
      timestamp. The registration must precede the first assignment; the start of that day
      is the latest time that is guaranteed to (the source has no registration time).
    * ``evaluator_id="ab-export"``, ``evaluator_version="1"``, ``evaluator_kind="evaluator"``:
      the outcome was measured by the exporting system, an authoritative evaluator.
    * ``allocation=None``: equal allocation over the arms (arms = distinct assigned
      values); give ``{arm: share}`` otherwise.
    * ``direction="increase"``: a conversion should go up.

    Naive timestamps are UTC by contract and written with ``+00:00``.
    """
    src = Path(path)
    df = read_source(src, all_text=True)
    needed = [unit_column, timestamp_column, assigned_column, outcome_column]
    if delivered_column is not None:
        needed.append(delivered_column)
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"{src}: missing column(s) {missing}; found {df.columns}")

    variant_map = dict(variant_map or {})
    reverse: dict[str, str] = {}
    for arm, value in variant_map.items():
        if value in reverse:
            raise ValueError(f"variant_map maps {reverse[value]!r} and {arm!r} to {value!r}")
        reverse[value] = arm

    n = df.height
    ts_raw = pl.col(timestamp_column)
    outcome_norm = pl.col(outcome_column).str.strip_chars().str.to_lowercase()
    delivered = (
        pl.col(delivered_column).replace(reverse) if delivered_column is not None
        else pl.col(assigned_column)
    )
    base = df.select(
        pl.format("{}:{}", pl.lit(experiment_id), pl.int_range(1, n + 1, dtype=pl.Int64)).alias("session_id"),
        pl.col(unit_column).alias("unit"),
        timestamp_text(ts_raw).alias("ts"),
        parse_timestamp(ts_raw).alias("ts_parsed"),
        pl.col(assigned_column).alias("arm"),
        delivered.alias("delivered_arm"),
        pl.when(outcome_norm.is_in(_TRUE)).then(pl.lit("true"))
        .when(outcome_norm.is_in(_FALSE)).then(pl.lit("false"))
        .when(pl.col(outcome_column).is_null()).then(pl.lit("null"))
        .otherwise(json_text(pl.col(outcome_column)))
        .alias("success"),
    )

    unparseable = base.filter(
        pl.col("ts_parsed").is_null()
        | pl.col("unit").is_null()
        | pl.col("arm").is_null()
        | ~pl.col("success").is_in(["true", "false"])
    ).height
    mismatched = base.filter(
        pl.col("arm").is_not_null() & (pl.col("delivered_arm") != pl.col("arm"))
    ).height

    first_ts = base["ts_parsed"].min()
    if registered_at is None:
        if first_ts is None:
            raise ValueError(f"{src}: no parseable timestamp; pass registered_at")
        reg = _dt.datetime(first_ts.year, first_ts.month, first_ts.day, tzinfo=_dt.timezone.utc)
    else:
        reg = _to_utc_datetime(registered_at)

    found = sorted(a for a in base["arm"].unique().to_list() if a is not None)
    arms = ([control_arm] if control_arm in found else []) + [a for a in found if a != control_arm]
    if allocation is None:
        shares = {a: 1.0 / len(arms) for a in arms} if arms else {}
    else:
        shares = {a: float(allocation.get(a, 0.0)) for a in arms}
    treatments = [a for a in arms if a != control_arm]
    if hypothesis is None:
        hypothesis = (
            f"Imported A/B export {src.name}: {', '.join(treatments) or '(no treatment)'} "
            f"vs {control_arm} on the binary outcome '{outcome_column}' (success), "
            f"unit '{unit_column}'."
        )
    arms_json = json.dumps(
        [
            {
                "name": a,
                "payload": ({"delivered_value": variant_map[a]} if a in variant_map else {}),
                "allocation": shares[a],
            }
            for a in arms
        ],
        separators=(",", ":"),
    )
    experiments = pl.DataFrame(
        {
            "experiment_id": [experiment_id],
            "org_id": [org_id],
            "task_type": [task_type],
            "kind": ["other"],
            "hypothesis": [hypothesis],
            "arms": [arms_json],
            "control_arm": [control_arm],
            "primary_metric": ["success"],
            "direction": [direction],
            "mde": [float(mde)],
            "alpha": [float(alpha)],
            "power": [float(power)],
            "baseline_mean": [float(baseline_mean)],
            "baseline_sd": [None],
            "min_samples_per_arm": [int(min_samples_per_arm)],
            "randomization_unit": [randomization_unit],
            "sessions_per_unit": [sessions_per_unit],
            "guardrails": ["[]"],
            "metric_caps": [None],
            "expected_verified_share": [1.0],
            "registered_at": [reg],
        },
        schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                          "registered_at": pl.Datetime("us", "UTC")},
    )

    sessions = base.select(
        "session_id",
        pl.lit(org_id).alias("org_id"),
        pl.col("unit").alias("user_id"),
        pl.lit(task_type).alias("task_type"),
        pl.lit(None, dtype=pl.String).alias("model"),
        pl.lit(None, dtype=pl.Float64).alias("budget"),
        pl.col("ts").alias("started_at"),
        pl.col("ts").alias("ended_at"),
        pl.lit([], dtype=pl.List(pl.String)).alias("context_doc_ids"),
        pl.lit("").alias("context_digest"),
        pl.lit(experiment_id).alias("experiment_id"),
        "delivered_arm",
        pl.lit(None, dtype=pl.String).alias("admission_id"),
    )
    assignments = base.select(
        "session_id",
        pl.lit(experiment_id).alias("experiment_id"),
        "arm",
        pl.col("unit").alias("unit_id"),
        pl.col("ts").alias("assigned_at"),
    )
    outcomes = base.select(
        "session_id",
        "success",
        pl.col("ts").alias("recorded_at"),
        pl.lit(evaluator_id).alias("evaluator_id"),
        pl.lit(evaluator_version).alias("evaluator_version"),
        pl.lit(evaluator_kind).alias("evaluator_kind"),
    )

    name = f"ab_export-{safe_name(experiment_id)}-{safe_name(src.stem)}"
    fallback = first_ts.date() if first_ts is not None else reg.date()
    writes = [
        write_landing(experiments, landing_dir, "experiments", time_column="registered_at",
                      name=name, json_columns=["arms", "guardrails", "metric_caps"]),
        write_landing(sessions, landing_dir, "sessions", time_column="started_at",
                      name=name, fallback_day=fallback),
        write_landing(assignments, landing_dir, "assignments", time_column="assigned_at",
                      name=name, fallback_day=fallback),
        write_landing(outcomes, landing_dir, "outcomes", time_column="recorded_at",
                      name=name, json_columns=["success"], fallback_day=fallback),
    ]
    return AbExportSummary(
        rows_read=n,
        records_written={w.table: w.rows for w in writes},
        files_written=[p for w in writes for p in w.files],
        experiment_ids=[experiment_id],
        arms=arms,
        registered_at=reg.isoformat(),
        mismatched_rows=mismatched,
        unparseable_rows=unparseable,
    )


__all__ = ["AbExportSummary", "import_ab_export", "iso"]
