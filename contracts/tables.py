"""Contracts of the landing tables (docs/landing.md): fields, types and domain rules.

Each table has a fixed field list (the only identifiers ever placed in SQL) and a pandera
model checked on the typed rows of one partition. Pandera's ``ge``/``le`` let ``inf`` and a
nullable float column lets ``NaN`` through, so every float field states finiteness itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

SCHEMA_VERSIONS: frozenset[int] = frozenset({1})
EVALUATOR_KINDS = ["evaluator", "human", "self_report", "heuristic"]
METRICS = ["success", "time_minutes", "tokens", "score"]


@dataclass(frozen=True)
class Field:
    """One landing field: its name, DuckDB type and whether a row needs it."""

    name: str
    sql_type: str  # VARCHAR, DOUBLE, BIGINT, INTEGER, BOOLEAN, TIMESTAMPTZ, JSON
    required: bool = True


@dataclass(frozen=True)
class TableContract:
    """A landing table: fields, the event-time column that names the partition, the key."""

    name: str
    event_time: str
    fields: tuple[Field, ...]
    key: tuple[str, ...]
    model: type[pa.DataFrameModel]

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]


def _finite(data: PolarsData) -> pl.LazyFrame:
    """True where the value is finite or null (NaN and +-inf fail)."""
    return data.lazyframe.select(pl.col(data.key).is_finite().fill_null(True))


def _non_blank(data: PolarsData) -> pl.LazyFrame:
    """True where the text is null or has a non-space character."""
    return data.lazyframe.select(pl.col(data.key).str.strip_chars().str.len_chars().gt(0).fill_null(True))


def _finite_check(*columns: str):
    """A model check that every listed float column is finite (pandera lets NaN and inf pass)."""
    return pa.check(*columns, name="finite")(classmethod(lambda cls, data: _finite(data)))


def _non_blank_check(*columns: str):
    """A model check that every listed text column is not blank."""
    return pa.check(*columns, name="non_blank")(classmethod(lambda cls, data: _non_blank(data)))


class ExperimentModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    experiment_id: str = pa.Field()
    org_id: str = pa.Field()
    task_type: str = pa.Field()
    kind: str = pa.Field(isin=["order", "inclusion", "memory_mode", "other"])
    hypothesis: str
    control_arm: str = pa.Field()
    primary_metric: str = pa.Field(isin=METRICS)
    direction: str = pa.Field(isin=["increase", "decrease"])
    mde: float = pa.Field(gt=0)
    alpha: float = pa.Field(gt=0, le=0.5)
    power: float = pa.Field(ge=0.5, lt=1)
    baseline_mean: float = pa.Field()
    baseline_sd: float = pa.Field(nullable=True, gt=0)
    min_samples_per_arm: int = pa.Field(ge=1)
    randomization_unit: str = pa.Field(isin=["session", "user"])
    sessions_per_unit: str = pa.Field(isin=["one", "many"])
    expected_verified_share: float = pa.Field(gt=0, le=1)

    class Config:
        strict = False

    check_non_blank = _non_blank_check("experiment_id", "org_id", "task_type", "control_arm")
    check_finite = _finite_check("mde", "alpha", "power", "baseline_mean", "baseline_sd", "expected_verified_share")


class ExperimentEventModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    experiment_id: str = pa.Field()
    status: str = pa.Field(isin=["active", "completed", "cancelled", "reopened"])
    reason: str = pa.Field(nullable=True)

    class Config:
        strict = False

    check_non_blank = _non_blank_check("experiment_id")


class SessionModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    session_id: str = pa.Field()
    org_id: str = pa.Field()
    user_id: str = pa.Field()
    task_type: str = pa.Field()
    budget: float = pa.Field(nullable=True, ge=0)

    class Config:
        strict = False

    check_non_blank = _non_blank_check("session_id", "org_id", "user_id", "task_type")
    check_finite = _finite_check("budget")

    @pa.dataframe_check(name="ended_after_started", error="ended_after_started: ended_at is before started_at")
    @classmethod
    def ended_after_started(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("ended_at").is_null() | (pl.col("ended_at") >= pl.col("started_at"))).fill_null(True)
        )

    @pa.dataframe_check(name="delivered_arm_with_experiment", error="delivered_arm_with_experiment: experiment_id is set without delivered_arm")
    @classmethod
    def delivered_arm_with_experiment(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("experiment_id").is_null() | pl.col("delivered_arm").is_not_null())


class AssignmentModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    session_id: str = pa.Field()
    experiment_id: str = pa.Field()
    arm: str = pa.Field()
    unit_id: str = pa.Field()

    class Config:
        strict = False

    check_non_blank = _non_blank_check("session_id", "experiment_id", "arm", "unit_id")


class OutcomeModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    session_id: str = pa.Field()
    time_minutes: float = pa.Field(nullable=True, ge=0)
    tokens: float = pa.Field(nullable=True, ge=0)
    score: float = pa.Field(nullable=True)
    evaluator_id: str = pa.Field()
    evaluator_version: str = pa.Field()
    evaluator_kind: str = pa.Field(isin=EVALUATOR_KINDS)

    class Config:
        strict = False

    check_non_blank = _non_blank_check("session_id", "evaluator_id", "evaluator_version")
    check_finite = _finite_check("time_minutes", "tokens", "score")

    @pa.dataframe_check(name="some_metric", error="some_metric: success, time_minutes, tokens and score are all null")
    @classmethod
    def some_metric(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.any_horizontal(pl.col(m).is_not_null() for m in ("success", "time_minutes", "tokens", "score"))
        )


class AdmissionEventModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    admission_id: str = pa.Field()
    org_id: str = pa.Field()
    task_type: str = pa.Field()
    state: str = pa.Field(isin=["admitted", "consumed", "launched", "blocked", "terminal"])

    class Config:
        strict = False

    check_non_blank = _non_blank_check("admission_id", "org_id", "task_type")


class ArmSnapshotModel(pa.DataFrameModel):
    schema_version: int = pa.Field(isin=sorted(SCHEMA_VERSIONS))
    experiment_id: str = pa.Field()
    arm: str = pa.Field()
    metric: str = pa.Field()
    n: int = pa.Field(ge=0)
    mean: float = pa.Field()
    variance: float = pa.Field(nullable=True, ge=0)

    class Config:
        strict = False

    check_non_blank = _non_blank_check("experiment_id", "arm", "metric")
    check_finite = _finite_check("mean", "variance")

    @pa.dataframe_check(name="variance_when_n_ge_2", error="variance_when_n_ge_2: variance is missing although n >= 2")
    @classmethod
    def variance_when_n_ge_2(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select((pl.col("n") < 2) | pl.col("variance").is_not_null())


_V = Field("schema_version", "BIGINT")

CONTRACTS: dict[str, TableContract] = {
    c.name: c
    for c in (
        TableContract(
            "experiments",
            "registered_at",
            (
                _V,
                Field("experiment_id", "VARCHAR"),
                Field("org_id", "VARCHAR"),
                Field("task_type", "VARCHAR"),
                Field("kind", "VARCHAR"),
                Field("hypothesis", "VARCHAR"),
                Field("arms", "JSON"),
                Field("control_arm", "VARCHAR"),
                Field("primary_metric", "VARCHAR"),
                Field("direction", "VARCHAR"),
                Field("mde", "DOUBLE"),
                Field("alpha", "DOUBLE"),
                Field("power", "DOUBLE"),
                Field("baseline_mean", "DOUBLE"),
                Field("baseline_sd", "DOUBLE", required=False),
                Field("min_samples_per_arm", "BIGINT"),
                Field("randomization_unit", "VARCHAR"),
                Field("sessions_per_unit", "VARCHAR", required=False),
                Field("guardrails", "JSON", required=False),
                Field("metric_caps", "JSON", required=False),
                Field("expected_verified_share", "DOUBLE", required=False),
                Field("registered_at", "TIMESTAMPTZ"),
            ),
            ("experiment_id",),
            ExperimentModel,
        ),
        TableContract(
            "experiment_events",
            "at",
            (
                _V,
                Field("experiment_id", "VARCHAR"),
                Field("status", "VARCHAR"),
                Field("at", "TIMESTAMPTZ"),
                Field("reason", "VARCHAR", required=False),
                # a declared allocation change: {arm: share}, effective from `at`
                Field("allocation", "JSON", required=False),
            ),
            ("experiment_id", "status", "at"),
            ExperimentEventModel,
        ),
        TableContract(
            "sessions",
            "started_at",
            (
                _V,
                Field("session_id", "VARCHAR"),
                Field("org_id", "VARCHAR"),
                Field("user_id", "VARCHAR"),
                Field("task_type", "VARCHAR"),
                Field("model", "VARCHAR", required=False),
                Field("budget", "DOUBLE", required=False),
                Field("started_at", "TIMESTAMPTZ"),
                Field("ended_at", "TIMESTAMPTZ", required=False),
                Field("context_doc_ids", "JSON", required=False),
                Field("context_digest", "VARCHAR", required=False),
                Field("experiment_id", "VARCHAR", required=False),
                Field("delivered_arm", "VARCHAR", required=False),
                Field("admission_id", "VARCHAR", required=False),
            ),
            ("session_id",),
            SessionModel,
        ),
        TableContract(
            "assignments",
            "assigned_at",
            (
                _V,
                Field("session_id", "VARCHAR"),
                Field("experiment_id", "VARCHAR"),
                Field("arm", "VARCHAR"),
                Field("unit_id", "VARCHAR"),
                Field("assigned_at", "TIMESTAMPTZ"),
            ),
            ("session_id", "experiment_id"),
            AssignmentModel,
        ),
        TableContract(
            "outcomes",
            "recorded_at",
            (
                _V,
                Field("session_id", "VARCHAR"),
                Field("success", "BOOLEAN", required=False),
                Field("time_minutes", "DOUBLE", required=False),
                Field("tokens", "DOUBLE", required=False),
                Field("score", "DOUBLE", required=False),
                Field("recorded_at", "TIMESTAMPTZ"),
                Field("evaluator_id", "VARCHAR"),
                Field("evaluator_version", "VARCHAR"),
                Field("evaluator_kind", "VARCHAR"),
            ),
            ("session_id", "evaluator_id", "evaluator_version", "evaluator_kind"),
            OutcomeModel,
        ),
        TableContract(
            "admission_events",
            "at",
            (
                _V,
                Field("admission_id", "VARCHAR"),
                Field("org_id", "VARCHAR"),
                Field("task_type", "VARCHAR"),
                Field("state", "VARCHAR"),
                Field("at", "TIMESTAMPTZ"),
                Field("arm", "VARCHAR", required=False),
                Field("session_id", "VARCHAR", required=False),
                Field("outcome", "VARCHAR", required=False),
            ),
            ("admission_id", "state", "at"),
            AdmissionEventModel,
        ),
        TableContract(
            "arm_snapshots",
            "at",
            (
                _V,
                Field("experiment_id", "VARCHAR"),
                Field("arm", "VARCHAR"),
                Field("metric", "VARCHAR"),
                Field("at", "TIMESTAMPTZ"),
                Field("n", "BIGINT"),
                Field("mean", "DOUBLE"),
                Field("variance", "DOUBLE", required=False),
            ),
            ("experiment_id", "arm", "metric", "at"),
            ArmSnapshotModel,
        ),
    )
}

# Defaults applied to optional registration fields that a record leaves out.
EXPERIMENT_DEFAULTS: dict[str, object] = {
    "sessions_per_unit": "many",
    "guardrails": "[]",
    "expected_verified_share": 1.0,
}
