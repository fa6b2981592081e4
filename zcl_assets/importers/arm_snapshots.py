"""Import aggregate-only experiment exports as ``arm_snapshots`` landing files.

Layouts:

``asos`` -- the ASOS Digital Experiments Dataset (Liu, Cardoso et al. 2021; bundled under
``bundled/asos_digital_experiments/``): columns ``experiment_id`` (text, e.g. ``036afc``),
``variant_id``, ``metric_id``, ``time_since_start`` (days), ``count_c``, ``count_t``,
``mean_c``, ``mean_t``, ``variance_c``, ``variance_t``; cumulative statistics per arm at
successive times. Several treatment variants share one control.

* arms: ``control`` and ``f"variant_{variant_id}"``;
* metrics: ``metric_id`` 1 -> ``success`` (binary), 2..4 -> ``f"metric_{k}"`` (continuous);
* ``at`` = ``start_date`` + ``time_since_start`` days, UTC, rounded to the second (the source
  times are multiples of hours stored as floats such as ``1.5000000000000002``);
* each source row gives one treatment snapshot and one control snapshot; a control snapshot
  repeated identically across variants is written once; two control snapshots for the same
  (experiment, metric, at) that disagree are both written (the pipeline quarantines the
  duplicate key) and counted in the summary;
* a missing variance stays null;
* one ``experiments`` registration per experiment (see :func:`import_arm_snapshots`).

``generic`` -- columns ``experiment_id, arm, metric, at, n, mean, variance`` already in
landing shape; passed through and split by day. Registrations must be landed separately.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from contracts.validate import check_records
from zcl_assets.importers.landing_writer import read_source, safe_name, timestamp_text, write_landing

ASOS_COLUMNS = (
    "experiment_id", "variant_id", "metric_id", "time_since_start", "count_c", "count_t",
    "mean_c", "mean_t", "variance_c", "variance_t",
)
GENERIC_COLUMNS = ("experiment_id", "arm", "metric", "at", "n", "mean", "variance")
ASOS_CITATION = (
    "ASOS Digital Experiments Dataset (Liu, Cardoso et al. 2021, arXiv 2111.10198, CC BY 4.0)"
)


@dataclass(frozen=True)
class ArmSnapshotSummary:
    """Result of :func:`import_arm_snapshots`."""

    rows_read: int
    records_written: dict[str, int]
    files_written: list[Path]
    experiment_ids: list[str]
    treatment_snapshots: int
    control_snapshots: int
    conflicting_control_keys: int
    """(experiment, metric, at) keys with more than one distinct control snapshot; all are
    written and the pipeline quarantines the duplicates"""
    experiment_arms: int
    """distinct (experiment, treatment arm) pairs (asos) or (experiment, arm) pairs (generic)"""


def _metric_name(metric_id: pl.Expr) -> pl.Expr:
    return (
        pl.when(metric_id == 1).then(pl.lit("success"))
        .otherwise(pl.format("metric_{}", metric_id))
    )


@dataclass(frozen=True)
class AsosOptions:
    """How an ``asos`` export is registered (see :func:`import_arm_snapshots` for why each default)."""

    start_date: str | _dt.date = "2021-01-04"
    org_id: str = "asos"
    task_type: str = "online_retail"
    mde_relative: float = 0.01
    alpha: float = 0.05
    power: float = 0.8
    min_samples_per_arm: int = 1000
    randomization_unit: str = "user"
    family_per_experiment: bool = True

    @property
    def start(self) -> _dt.datetime:
        """``start_date`` at 00:00 UTC."""
        day = _dt.date.fromisoformat(self.start_date) if isinstance(self.start_date, str) else self.start_date
        return _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc)


def import_arm_snapshots(
    path: str | os.PathLike[str], landing_dir: str | os.PathLike[str], *, layout: str = "asos", **options
) -> ArmSnapshotSummary:
    """Import an aggregate export as ``arm_snapshots`` (+ registrations for ``asos``).

    Files: ``<landing>/arm_snapshots/<day>/arm_snapshots-<layout>-<file stem>.parquet`` and,
    for ``asos``, ``<landing>/experiments/<day>/...`` with the same name; re-importing the
    same file replaces them. Every registration is checked by the landing contract first;
    if one is refused, nothing lands and the error lists the reasons.

    Options (the fields of :class:`AsosOptions`; defaults and why):

    * ``layout="asos"``: the bundled dataset; ``"generic"`` for landing-shaped snapshots.
    * ``start_date="2021-01-04"``: the ASOS data give only time since start, not dates; a
      fixed, documented Monday keeps imports reproducible. ``at`` = start + days, UTC.
    * ``org_id="asos"``, ``task_type="online_retail"``: the source names neither.
    * ``mde_relative=0.01``: a 1% relative lift, converted to the absolute MDE the
      registration needs: ``mde = mde_relative * baseline_mean``.
    * ``alpha=0.05``, ``power=0.8``: conventional.
    * ``min_samples_per_arm=1000``: a floor for the power analysis; the ASOS arms hold tens
      of thousands of users or more, so it is never binding in practice.
    * ``randomization_unit="user"``: ASOS randomizes customers.
    * ``family_per_experiment=True``: each experiment registers under its own task type
      ``<task_type>/<experiment_id>``. The source has no calendar dates, so experiments that
      ran months apart would otherwise look concurrent and share one family's alpha slots
      (DESIGN section 6); False puts them all in ``task_type``.

    The registration written per ASOS experiment: arms ``control`` + its variants with the
    allocation **unknown** (``allocation: null``; the source does not say, and some splits
    are unequal by design, so the pipeline tests that the split stays constant instead of
    testing it against a guess), ``control_arm="control"``, ``primary_metric="success"`` (metric 1, binary),
    ``direction="increase"``, ``baseline_mean`` = the control mean of metric 1 at its first
    snapshot with a positive mean (the source lacks a registered baseline; this is the earliest control figure),
    ``baseline_sd`` null (binary metric), ``kind="other"``, ``registered_at`` = start_date
    00:00 UTC minus one second (before every snapshot), a hypothesis naming the source.
    All experiments share the start date because the source has no calendar dates.
    """
    if layout not in ("asos", "generic"):
        raise ValueError(f"layout must be 'asos' or 'generic', not {layout!r}")
    src = Path(path)
    name = f"arm_snapshots-{layout}-{safe_name(src.stem)}"
    if layout == "generic":
        return _import_generic(src, landing_dir, name)
    opts = AsosOptions(**options)
    df = _read_asos(src, opts.start)
    treatment, control, snapshots = _asos_snapshots(df)
    experiments = _asos_registrations(df, opts)
    writes = [
        write_landing(experiments, landing_dir, "experiments", time_column="registered_at",
                      name=name, json_columns=["arms", "guardrails", "metric_caps"], fmt="parquet"),
        write_landing(snapshots, landing_dir, "arm_snapshots", time_column="at", name=name, fmt="parquet"),
    ]
    return ArmSnapshotSummary(
        rows_read=df.height,
        records_written={w.table: w.rows for w in writes},
        files_written=[p for w in writes for p in w.files],
        experiment_ids=experiments["experiment_id"].to_list(),
        treatment_snapshots=treatment.height,
        control_snapshots=control.height,
        conflicting_control_keys=control.group_by(["experiment_id", "metric", "at"]).len().filter(pl.col("len") > 1).height,
        experiment_arms=df.select("experiment_id", "variant_id").unique().height,
    )


def _read_asos(src: Path, start: _dt.datetime) -> pl.DataFrame:
    """The ASOS rows typed, with their time ``at`` and metric name."""
    df = read_source(src, string_columns=["experiment_id"])
    missing = [c for c in ASOS_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{src}: missing column(s) {missing} for layout 'asos'")
    return df.with_columns(
        pl.col("experiment_id").cast(pl.String),
        pl.col("variant_id").cast(pl.Int64),
        pl.col("metric_id").cast(pl.Int64),
        *[pl.col(c).cast(pl.Float64) for c in ASOS_COLUMNS[3:]],
    ).with_columns(
        (pl.lit(start) + pl.duration(seconds=(pl.col("time_since_start") * 86400.0).round(0).cast(pl.Int64))).alias("at"),
        _metric_name(pl.col("metric_id")).alias("metric"),
    )


def _asos_snapshots(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The treatment snapshots, the control snapshots (an identical repeat written once), and
    both in landing order: control first, then variants, each in source order of first appearance."""
    def arm_rows(arm: pl.Expr, side: str) -> pl.DataFrame:
        return df.select(
            "experiment_id", arm.alias("arm"), "metric", "at",
            pl.col(f"count_{side}").round(0).cast(pl.Int64).alias("n"),
            pl.col(f"mean_{side}").alias("mean"), pl.col(f"variance_{side}").alias("variance"),
        )

    treatment = arm_rows(pl.format("variant_{}", pl.col("variant_id")), "t")
    control = arm_rows(pl.lit("control"), "c").unique(maintain_order=True)
    snapshots = pl.concat([control, treatment]).sort(["experiment_id", "at", "metric", "arm"], maintain_order=True)
    return treatment, control, snapshots


def _asos_registrations(df: pl.DataFrame, opts: AsosOptions) -> pl.DataFrame:
    """One registration per experiment, checked by the landing contract (a refusal lands nothing)."""
    first_success = (
        df.filter((pl.col("metric_id") == 1) & (pl.col("mean_c") > 0))
        .sort(["experiment_id", "time_since_start"])
        .group_by("experiment_id", maintain_order=True)
        .first()
        .select("experiment_id", pl.col("mean_c").alias("baseline_mean"))
    )
    variants = (
        df.select("experiment_id", "variant_id").unique()
        .sort(["experiment_id", "variant_id"])
        .group_by("experiment_id", maintain_order=True)
        .agg(pl.col("variant_id"))
    ).join(first_success, on="experiment_id", how="left")
    rows = [_asos_registration(eid, vids, baseline, opts) for eid, vids, baseline in variants.iter_rows()]
    refused = [
        f"{row['experiment_id']}: " + "; ".join(f"{rule}: {why}" for rule, why in problems)
        for row, problems in zip(rows, check_records(
            "experiments",
            [{**r, "arms": json.loads(r["arms"]), "guardrails": [], "registered_at": r["registered_at"].isoformat(), "schema_version": 1}
             for r in rows],
        ))
        if problems
    ]
    if refused:
        raise ValueError("registrations the contract refuses, nothing landed: " + " | ".join(refused[:10]))
    return pl.DataFrame(
        rows,
        schema_overrides={"mde": pl.Float64, "baseline_mean": pl.Float64,
                          "baseline_sd": pl.Float64, "metric_caps": pl.String,
                          "registered_at": pl.Datetime("us", "UTC")},
    )


def _asos_registration(eid: str, vids: list[int], baseline: float | None, opts: AsosOptions) -> dict:
    arm_names = ["control"] + [f"variant_{v}" for v in vids]
    arms = [{"name": "control", "payload": {"source_arm": "control"}, "allocation": None}]
    arms += [{"name": f"variant_{v}", "payload": {"source_arm": "treatment", "variant_id": v}, "allocation": None}
             for v in vids]
    return {
        "experiment_id": eid,
        "org_id": opts.org_id,
        "task_type": f"{opts.task_type}/{eid}" if opts.family_per_experiment else opts.task_type,
        "kind": "other",
        "hypothesis": (
            f"ASOS experiment {eid}: {', '.join(arm_names[1:])} vs control increase "
            f"metric 1 (binary, 'success'). Source: {ASOS_CITATION}; dates are "
            f"relative to an assumed start {opts.start.date().isoformat()}."
        ),
        "arms": json.dumps(arms, separators=(",", ":")),
        "control_arm": "control",
        "primary_metric": "success",
        "direction": "increase",
        "mde": (opts.mde_relative * baseline) if baseline is not None else None,
        "alpha": float(opts.alpha),
        "power": float(opts.power),
        "baseline_mean": baseline,
        "baseline_sd": None,
        "min_samples_per_arm": int(opts.min_samples_per_arm),
        "randomization_unit": opts.randomization_unit,
        "sessions_per_unit": "many",
        "guardrails": "[]",
        "metric_caps": None,
        "expected_verified_share": 1.0,
        "registered_at": opts.start - _dt.timedelta(seconds=1),
    }


def _import_generic(src: Path, landing_dir, name: str) -> ArmSnapshotSummary:
    df = read_source(src, string_columns=["experiment_id", "arm", "metric", "at"])
    missing = [c for c in GENERIC_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{src}: missing column(s) {missing} for layout 'generic'")
    at = pl.col("at")
    at_expr = (
        at if isinstance(df.schema["at"], (pl.Datetime, pl.Date)) else timestamp_text(at)
    )
    snapshots = df.select(
        *[pl.col(c) for c in ("experiment_id", "arm", "metric")],
        at_expr.alias("at"),
        *[pl.col(c) for c in ("n", "mean", "variance")],
    )
    w = write_landing(snapshots, landing_dir, "arm_snapshots", time_column="at", name=name, fmt="parquet")
    return ArmSnapshotSummary(
        rows_read=df.height,
        records_written={"arm_snapshots": w.rows},
        files_written=list(w.files),
        experiment_ids=sorted(x for x in df["experiment_id"].unique().to_list() if x is not None),
        treatment_snapshots=snapshots.filter(pl.col("arm") != "control").height,
        control_snapshots=snapshots.filter(pl.col("arm") == "control").height,
        conflicting_control_keys=0,
        experiment_arms=df.select("experiment_id", "arm").unique().height,
    )
