"""The registration file of a PostgreSQL source: what the ZCL schema does not say.

The ZCL schema (seed note 000, ``migrations/004_experiments.sql``) keeps a hypothesis, its task
type, treatment and control payloads and a status, but no MDE, alpha, power, baseline,
allocation, randomization unit, guardrails or organization, and ``zcl_outcomes.success`` is a
bare ``BOOLEAN NOT NULL`` with no word on who decided it. A YAML file beside the connection
supplies them (docs/postgres.md)::

    source_name: zcl                 # landed files are named postgres-<source_name>.parquet
    schema: public
    tables:                          # the same shape under other names
      experiments: zcl_experiments
      assignments: zcl_experiment_assignments
      sessions: zcl_sessions
      outcomes: zcl_outcomes
    lookback_hours: 72               # late rows: each read starts this long before the watermark
    registration:                    # every experiment; `zcl import ab-export`'s defaults otherwise
      org_id: acme
      mde: 0.05
    experiments:                     # one experiment's own values, by its id
      3f2c...: {kind: inclusion, baseline_mean: 0.42}
    evaluators:                      # who decided the outcomes, by task type ("*": any)
      "*": {id: unit-tests, version: "2.1", kind: evaluator}

Registration keys are the options of ``zcl import ab-export`` that a registration needs, with
its defaults (:class:`~zcl_assets.importers.ab_export.AbExportOptions`), plus ``kind``,
``primary_metric``, ``baseline_sd``, ``guardrails``, ``metric_caps`` and
``expected_verified_share`` (the landing contract's defaults). Two defaults follow the schema
instead: the coin is flipped per session (``UNIQUE(session_id, experiment_id)``), so
``randomization_unit`` is ``session``, and a user has many sessions (``sessions_per_unit: many``).
Outcomes without an evaluator entry land as kind ``unknown`` (evaluator id and version
``unknown``): the evaluation contract of the task type decides whether they count.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from zcl_assets.importers.ab_export import AbExportOptions

SOURCE_TABLES: tuple[str, ...] = ("experiments", "assignments", "sessions", "outcomes")
"""The four tables of the ZCL schema, by role; their names are configurable."""
DEFAULT_TABLE_NAMES: dict[str, str] = {
    "experiments": "zcl_experiments",
    "assignments": "zcl_experiment_assignments",
    "sessions": "zcl_sessions",
    "outcomes": "zcl_outcomes",
}
DEFAULT_LOOKBACK_HOURS = 72.0
"""Three days: a row committed up to three days after its own timestamp is still read by the
incremental pass; older late rows, updates and deletions are found by the reconciliation."""

OPTION_KEYS: tuple[str, ...] = (
    "org_id", "mde", "alpha", "power", "baseline_mean", "min_samples_per_arm", "randomization_unit",
    "sessions_per_unit", "allocation", "direction",
)
"""Registration keys that are options of ``zcl import ab-export`` (its defaults and refusals)."""
RECORD_KEYS: tuple[str, ...] = ("kind", "primary_metric", "baseline_sd", "guardrails", "metric_caps", "expected_verified_share")
"""Registration keys the export importer does not have; the landing contract's defaults apply."""
SCHEMA_DEFAULTS: dict[str, str] = {"randomization_unit": "session", "sessions_per_unit": "many"}
"""Where the ZCL schema itself answers: the coin is per session, and users return."""
UNKNOWN = "unknown"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Evaluator:
    """Who decided an outcome: id, version and kind (``contracts.tables.EVALUATOR_KINDS``)."""

    id: str = UNKNOWN
    version: str = UNKNOWN
    kind: str = UNKNOWN


@dataclass(frozen=True)
class SourceConfig:
    """A PostgreSQL source's settings (see the module docstring); the connection is not here."""

    source_name: str = "zcl"
    schema: str = "public"
    tables: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_TABLE_NAMES))
    lookback: _dt.timedelta = _dt.timedelta(hours=DEFAULT_LOOKBACK_HOURS)
    registration: dict[str, object] = field(default_factory=dict)
    experiments: dict[str, dict[str, object]] = field(default_factory=dict)
    evaluators: dict[str, Evaluator] = field(default_factory=dict)

    def options(self, experiment_id: str, task_type: str, hypothesis: str, registered_at: _dt.datetime) -> AbExportOptions:
        """The export importer's options for one experiment: its defaults, the schema's, the file's."""
        values = {**SCHEMA_DEFAULTS, **_pick(self.registration, OPTION_KEYS), **_pick(self.experiments.get(experiment_id, {}), OPTION_KEYS)}
        return AbExportOptions(experiment_id=experiment_id, arms=("control", "treatment"), control_arm="control",
                               task_type=task_type, hypothesis=hypothesis, registered_at=registered_at, **values)

    def record_fields(self, experiment_id: str) -> dict[str, object]:
        """The registration fields the export importer does not set, for one experiment."""
        return {**_pick(self.registration, RECORD_KEYS), **_pick(self.experiments.get(experiment_id, {}), RECORD_KEYS)}

    def evaluator(self, task_type: str | None) -> Evaluator:
        """The evaluator of a task type's outcomes: its entry, else ``"*"``, else unknown."""
        return self.evaluators.get(task_type or "", self.evaluators.get("*", Evaluator()))

    def digest(self, role: str) -> str:
        """A digest of the settings that shape the landed rows of one table role: a change
        rewrites that table's landed days."""
        shaping = {
            "experiments": (self.registration, self.experiments, self.source_name),
            "assignments": (self.registration, self.experiments),  # the unit follows the randomization unit
            "sessions": (),
            "outcomes": ({k: dataclasses.asdict(v) for k, v in sorted(self.evaluators.items())},),
        }[role]
        text = json.dumps([self.tables[role], self.schema, *shaping], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _pick(values: dict[str, object], keys: tuple[str, ...]) -> dict[str, object]:
    return {k: values[k] for k in keys if k in values}


_TOP_KEYS = {"source_name", "schema", "tables", "lookback_hours", "registration", "experiments", "evaluators"}


def load_config(path: str | os.PathLike[str] | None) -> SourceConfig:
    """Read a registration file; ``None`` or a missing file gives every default.

    Raises:
        ValueError: an unknown key (at the top, in a registration or an evaluator), a table
            role other than the four, a name that is not a plain SQL identifier, a negative
            look-back, or an evaluator kind outside the contract's.
    """
    if path is None or not Path(path).exists():
        return SourceConfig()
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    where = str(path)
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping at the top")
    _refuse_unknown(data, _TOP_KEYS, where)
    tables = {**DEFAULT_TABLE_NAMES, **(data.get("tables") or {})}
    _refuse_unknown(tables, set(SOURCE_TABLES), f"{where}: tables")
    for name in [data.get("schema", "public"), *tables.values()]:
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"{where}: {name!r} is not a plain SQL identifier (letters, digits, _)")
    lookback = float(data.get("lookback_hours", DEFAULT_LOOKBACK_HOURS))
    if not lookback >= 0:
        raise ValueError(f"{where}: lookback_hours must be 0 or more, got {lookback!r}")
    registration = data.get("registration") or {}
    experiments = {str(k): (v or {}) for k, v in (data.get("experiments") or {}).items()}
    for label, values in [("registration", registration), *((f"experiments.{k}", v) for k, v in experiments.items())]:
        _refuse_unknown(values, set(OPTION_KEYS) | set(RECORD_KEYS), f"{where}: {label}")
    return SourceConfig(
        source_name=str(data.get("source_name", "zcl")), schema=data.get("schema", "public"), tables=tables,
        lookback=_dt.timedelta(hours=lookback), registration=registration, experiments=experiments,
        evaluators={str(k): _evaluator(v, f"{where}: evaluators.{k}") for k, v in (data.get("evaluators") or {}).items()},
    )


def _evaluator(values: object, where: str) -> Evaluator:
    from contracts.tables import EVALUATOR_KINDS

    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected {{id, version, kind}}")
    _refuse_unknown(values, {"id", "version", "kind"}, where)
    evaluator = Evaluator(**{k: str(v) for k, v in values.items()})
    if evaluator.kind not in EVALUATOR_KINDS:
        raise ValueError(f"{where}: kind {evaluator.kind!r} is not one of {EVALUATOR_KINDS}")
    return evaluator


def _refuse_unknown(values: object, allowed: set[str], where: str) -> None:
    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected a mapping")
    unknown = sorted(set(map(str, values)) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(allowed)}")
