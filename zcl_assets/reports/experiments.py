"""What an analyst needs of one experiment, read from the warehouse: the view behind every report.

One :class:`ExperimentView` per experiment holds its registration, every comparison of its
latest look (on or before a chosen day), the history of its primary comparisons over looks,
its quarantined and excluded rows by rule and its verified share. The text report, the HTML
report and the Dagster view all render these objects, so each figure is read once.

Fields that the decision step of the analysis writes (``decision``, ``decision_reason``,
adjusted p-values, information fraction, days to the plan, ...) are read when the analysis
table has them and reported as "not computed" when it does not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.analysis.look import look_end
from zcl_assets.reports import alarms as _alarms
from zcl_assets.reports.methods import NOT_COMPUTED
from zcl_assets.stats.decision import Label

OWN_KINDS = frozenset({"order", "inclusion", "memory_mode"})
"""Registration kinds of the project's own context experiments; importers register ``other``."""


ATTENTION_ORDER = _alarms.ATTENTION_ORDER
"""How reports group experiments, what needs attention first (``reports/alarms.py``)."""


def _present(row: dict, name: str) -> object:
    """``row[name]`` when the analysis wrote that column and the value is a real one, else None."""
    value = row.get(name)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@dataclass(frozen=True)
class Arm:
    """One arm of the latest look, primary metric: ``units`` analysed, ``successes`` (binary) or
    ``mean`` and ``sd`` (continuous); ``share`` is the registered allocation share."""

    name: str
    share: float | None
    units: int | None
    successes: int | None
    mean: float | None
    sd: float | None
    assigned_units: int | None


@dataclass(frozen=True)
class ExperimentView:
    """One experiment as of its latest look.

    Attributes:
        registration: the registration row (``sql/select_registrations.sql``), ``arms`` and
            ``guardrails`` parsed from JSON.
        as_of: UTC day of the latest look shown (``YYYY-MM-DD``).
        looks: how many looks exist up to ``as_of``.
        comparisons: every comparison (metric x treatment arm) of that look, analysis-table
            columns, primary metric first.
        history: the primary comparisons of every look up to ``as_of``, oldest first.
        quarantine: ``stage, source_table, rule, rows`` of this experiment's rejected rows.
        sessions: assigned sessions up to the look (None for aggregate sources).
        verified_sessions: sessions with an authoritative outcome (None for aggregate sources).
        uncounted_kinds: {evaluator kind: sessions} of sessions whose outcomes are all of kinds the
            evaluation contract does not count (an outcome with no evaluator is of kind ``unknown``).
        first_assigned_at: ISO time of the first assignment (None for aggregate sources).
        breakdowns: this experiment's ``segment_breakdowns`` rows (exploratory; empty when none).
        plan: its frozen ``experiment_plans`` row (empty when the warehouse has none).
    """

    registration: dict
    as_of: str
    looks: int
    comparisons: pl.DataFrame
    history: pl.DataFrame
    quarantine: pl.DataFrame
    sessions: int | None = None
    verified_sessions: int | None = None
    uncounted_kinds: dict[str, int] = field(default_factory=dict)
    first_assigned_at: str | None = None
    assigned_units: dict[str, int] = field(default_factory=dict)
    breakdowns: pl.DataFrame = field(default_factory=pl.DataFrame)
    plan: dict = field(default_factory=dict)

    # -- registration ---------------------------------------------------------------------------
    @property
    def experiment_id(self) -> str:
        return self.registration["experiment_id"]

    @property
    def org_id(self) -> str:
        return self.registration["org_id"]

    @property
    def task_type(self) -> str:
        return self.registration["task_type"]

    @property
    def kind(self) -> str:
        return self.registration["kind"]

    @property
    def is_own(self) -> bool:
        """A ZCL context experiment (order, inclusion, memory mode), not an imported export."""
        return self.kind in OWN_KINDS

    @property
    def primary_metric(self) -> str:
        return self.registration["primary_metric"]

    @property
    def control_arm(self) -> str:
        return self.registration["control_arm"]

    @property
    def mde(self) -> float:
        return float(self.registration["mde"])

    @property
    def source(self) -> str:
        return self.comparisons.get_column("source")[0] if self.comparisons.height else "sessions"

    @cached_property
    def _metric_columns(self) -> dict[tuple[str, str], str]:
        """The first value the analysis wrote of ``role`` and ``direction`` for each metric (read once)."""
        written: dict[tuple[str, str], str] = {}
        for column in ("role", "direction"):
            if column in self.comparisons.columns and "metric" in self.comparisons.columns:
                # plain Python: a look has a few rows, and a polars query per view cost 0.75 ms of 1,000 views
                for metric, value in zip(self.comparisons.get_column("metric"), self.comparisons.get_column(column)):
                    if value is not None:
                        written.setdefault((metric, column), value)
        return written

    @cached_property
    def estimands(self) -> dict[tuple[str, str], int]:
        """Rows per (metric, treatment arm) of the look: more than one when a metric has two estimands."""
        if not {"metric", "treatment_arm"} <= set(self.comparisons.columns):
            return {}
        counts = self.comparisons.group_by(["metric", "treatment_arm"]).len()
        return {(m, a): n for m, a, n in counts.iter_rows()}

    def _written(self, metric: str, column: str) -> str | None:
        return self._metric_columns.get((metric, column))

    def direction_of(self, metric: str) -> str | None:
        """``increase`` or ``decrease`` when the analysis or the registration says which way ``metric`` is good."""
        if "role" in self.comparisons.columns:  # the analysis writes each metric's own direction
            return self._written(metric, "direction") if self.role_of(metric) != "secondary" else None
        if metric == self.primary_metric:
            return self.registration["direction"]
        for guardrail in self.registration["guardrails"]:
            if guardrail.get("metric") == metric:
                return guardrail.get("direction")
        return None

    def role_of(self, metric: str) -> str:
        """``primary`` (decides), ``guardrail`` (can hold adopt back) or ``secondary`` (reported)."""
        written = self._written(metric, "role")
        if written:
            return written
        if metric == self.primary_metric:
            return "primary"
        if any(g.get("metric") == metric for g in self.registration["guardrails"]):
            return "guardrail"
        return "secondary"

    def margin_of(self, metric: str) -> float | None:
        """The non-inferiority margin of a guardrail metric (None for other metrics)."""
        for guardrail in self.registration["guardrails"]:
            if guardrail.get("metric") == metric and guardrail.get("margin") is not None:
                return float(guardrail["margin"])
        return None

    # -- the look -------------------------------------------------------------------------------
    @cached_property
    def primary(self) -> pl.DataFrame:
        return self.comparisons.filter(pl.col("is_primary"))

    @cached_property
    def _primary_rows(self) -> list[dict]:
        return self.primary.to_dicts()

    def primary_rows(self) -> list[dict]:
        """The primary comparisons as dicts (read once per view; callers only read them)."""
        return self._primary_rows

    def arms(self) -> list[Arm]:
        """Control first, then each treatment arm, with its primary-metric figures."""
        shares = {a["name"]: a.get("allocation") for a in self.registration["arms"]}
        rows = self.primary_rows()
        out: list[Arm] = []
        if rows:
            c = rows[0]
            out.append(_arm(self.control_arm, shares, c["n_control"], c["successes_control"], c["mean_control"],
                            c["variance_control"], self.assigned_units))
        for r in rows:
            out.append(_arm(r["treatment_arm"], shares, r["n_treatment"], r["successes_treatment"], r["mean_treatment"],
                            r["variance_treatment"], self.assigned_units))
        return out

    @property
    def decisions(self) -> list[str | None]:
        return [_present(r, "decision") for r in self.primary_rows()]

    @property
    def decision(self) -> str:
        """The experiment's headline decision: ``invalid`` if any primary comparison is invalid, else
        a decided label, else ``continue``; ``not computed`` while the analysis writes no decision."""
        labels = [d for d in self.decisions if d]
        if not labels:
            return NOT_COMPUTED
        if Label.INVALID.value in labels:
            return Label.INVALID.value
        for label in (Label.REJECT.value, Label.ADOPT.value, Label.NO_EFFECT.value, Label.INCONCLUSIVE.value):
            if label in labels:
                return label
        return labels[0]

    @property
    def decision_reason(self) -> str:
        rows = self.primary_rows()
        reasons = []
        for r in rows:
            reason = _present(r, "decision_reason")
            if reason:
                prefix = f"{r['treatment_arm']}: " if len(rows) > 1 else ""
                reasons.append(prefix + str(reason))
        return "; ".join(reasons)

    @cached_property
    def alarms(self) -> list[_alarms.Alarm]:
        """Every alarm of the look, most severe first (``reports/alarms.py``)."""
        return _alarms.alarms(self)

    @cached_property
    def attention(self) -> str:
        """The group of :data:`ATTENTION_ORDER` (invalid, alarm, decided, continuing, not computed)."""
        return _alarms.attention(self)

    @cached_property
    def stalled_since(self) -> str | None:
        """The day of the last new unit when the experiment is stalled (no days-left figure then), else None."""
        found = [a for a in self.alarms if a.kind == "stalled"]
        return _alarms.last_new_units(self) if found else None

    # -- trust: SRM, progress, verified share ------------------------------------------------------
    @property
    def srm_p(self) -> float | None:
        """Smallest sequential SRM p-value over the primary comparisons (None if not computed)."""
        values = [r["srm_sequential_p"] for r in self.primary_rows() if _present(r, "srm_sequential_p") is not None]
        return min(values) if values else None

    @property
    def srm_chisquare_p(self) -> float | None:
        values = [r["srm_chisquare_p"] for r in self.primary_rows() if _present(r, "srm_chisquare_p") is not None]
        return min(values) if values else None

    @property
    def srm_status(self) -> str:
        """``mismatch``, ``ok`` or ``not computed``: the analysis's own verdict (``srm_fired``)."""
        fired = [f for f in (_present(r, "srm_fired") for r in self.primary_rows()) if f is not None]
        if not fired:
            return NOT_COMPUTED
        return "mismatch" if any(fired) else "ok"

    @property
    def srm_alarm(self) -> bool:
        return self.srm_status == "mismatch"

    @property
    def srm_test(self) -> str | None:
        """What the SRM test checks: the declared allocation, or constancy when none was declared."""
        tests = [r["srm_test"] for r in self.primary_rows() if _present(r, "srm_test")]
        return tests[0] if tests else None

    @property
    def planned_per_arm(self) -> float | None:
        values = [r["planned_n_per_arm"] for r in self.primary_rows() if _present(r, "planned_n_per_arm") is not None]
        return max(values) if values else None

    @property
    def plan_reachable(self) -> bool:
        planned = self.planned_per_arm
        return planned is not None and math.isfinite(planned)

    @property
    def plan_reason(self) -> str | None:
        reasons = [r["plan_reason"] for r in self.primary_rows() if _present(r, "plan_reason")]
        return reasons[0] if reasons else None

    @property
    def information_fraction(self) -> float | None:
        """Share of the planned sample reached: the analysis's figure when written, else units of the
        control arm over the planned units per arm (None when the plan is unreachable)."""
        written = [r["information_fraction"] for r in self.primary_rows() if _present(r, "information_fraction") is not None]
        if written:
            return min(written)
        rows = self.primary_rows()
        if not rows or not self.plan_reachable or not rows[0]["n_control"]:
            return None
        return rows[0]["n_control"] / self.planned_per_arm

    @property
    def days_left(self) -> float | None:
        """Days to reach the planned sample at current traffic, when the analysis computes it."""
        written = [r["days_to_plan"] for r in self.primary_rows() if _present(r, "days_to_plan") is not None]
        return max(written) if written else None

    @property
    def power_at_mde(self) -> float | None:
        """Power reached for the registered MDE at the current sample, when the analysis computes it."""
        written = [r["power_at_mde"] for r in self.primary_rows() if _present(r, "power_at_mde") is not None]
        return min(written) if written else None

    @property
    def users_in_both_arms(self) -> int | None:
        written = [r["users_in_both_arms"] for r in self.primary_rows() if _present(r, "users_in_both_arms") is not None]
        return max(written) if written else None

    @property
    def status(self) -> str | None:
        """The experiment's lifecycle status at the look (active, completed, ...), when written."""
        written = [r["status"] for r in self.primary_rows() if _present(r, "status")]
        return written[0] if written else None

    @property
    def verified_share(self) -> float | None:
        """Share of assigned sessions with an authoritative outcome (None for aggregate sources)."""
        written = [r["verified_share"] for r in self.primary_rows() if _present(r, "verified_share") is not None]
        if written:
            return min(written)
        if self.sessions:
            return self.verified_sessions / self.sessions
        return None

    @property
    def quarantined_rows(self) -> int:
        return int(self.quarantine.filter(pl.col("stage") != "experience").get_column("rows").sum() or 0)

    @property
    def excluded_rows(self) -> int:
        return int(self.quarantine.filter(pl.col("stage") == "experience").get_column("rows").sum() or 0)


def _arm(name, shares, n, successes, mean, variance, assigned) -> Arm:
    sd = math.sqrt(variance) if variance is not None and variance >= 0 else None
    return Arm(name=name, share=shares.get(name), units=n, successes=successes, mean=mean, sd=sd,
               assigned_units=assigned.get(name))


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def load_views(
    con: duckdb.DuckDBPyConnection,
    as_of: str | None = None,
    experiment_ids: Sequence[str] = (),
    org_ids: Sequence[str] = (),
) -> list[ExperimentView]:
    """Every analysed experiment as of its latest look on or before ``as_of`` (default: its latest).

    Args:
        con: a connection to the warehouse (read-only is enough).
        as_of: ``YYYY-MM-DD`` or None.
        experiment_ids: keep only these experiments (empty: all).
        org_ids: keep only these organizations (empty: all).

    Returns:
        Views sorted by :data:`ATTENTION_ORDER`, the project's own experiments first within each
        group, then by organization and id.

    Raises:
        LookupError: no look has been taken yet, none on or before ``as_of``, or the filters
            match no analysed experiment (the message lists what exists).
    """
    tables = _tables(con)
    if "experiment_analysis" not in tables:
        raise LookupError("no look has been taken yet: run `zcl run`")
    params = {"as_of": as_of}
    latest = con.execute(load_sql("reports/select_latest_looks"), params).pl()
    if latest.height == 0:
        raise LookupError("no look has been taken yet" + (f" on or before {as_of}" if as_of else "") + ": run `zcl run`")
    registrations = {
        r["experiment_id"]: {**r, "arms": json.loads(r["arms"] or "[]"), "guardrails": json.loads(r["guardrails"] or "[]")}
        for r in con.execute(load_sql("select_registrations")).pl().to_dicts()
    }
    wanted = latest.filter(pl.col("experiment_id").is_in(list(registrations)))
    if experiment_ids:
        wanted = wanted.filter(pl.col("experiment_id").is_in(list(experiment_ids)))
    if org_ids:
        wanted = wanted.filter(pl.col("org_id").is_in(list(org_ids)))
    if wanted.height == 0:
        known = sorted(latest.get_column("experiment_id").unique().to_list())
        orgs = sorted(latest.get_column("org_id").unique().to_list())
        raise LookupError(
            f"no analysed experiment matches experiment {list(experiment_ids) or 'any'} and organization "
            f"{list(org_ids) or 'any'}; organizations: {', '.join(orgs)}; experiments: {', '.join(known[:12])}"
            + (" ..." if len(known) > 12 else "")
        )
    history = con.execute(load_sql("reports/select_look_history"), params).pl()
    quarantine = _quarantine(con, tables)
    breakdowns = (con.execute("SELECT * FROM segment_breakdowns ORDER BY ALL").pl() if "segment_breakdowns" in tables
                  else pl.DataFrame(schema={"experiment_id": pl.String}))
    units = _assigned_units(con, wanted)
    uncounted = _uncounted_outcomes(con, wanted)
    plans = ({r["experiment_id"]: r for r in con.execute("SELECT * FROM experiment_plans").pl().to_dicts()}
             if "experiment_plans" in tables else {})

    # Each frame split by experiment once: a filter per view and frame cost 0.8 s at 1,000 experiments.
    history_of, units_of, breakdowns_of = (_by_experiment(frame) for frame in (history, units, breakdowns))
    quarantine_of = _by_experiment(quarantine, include_key=False)
    views = []
    for (experiment_id,), rows in wanted.partition_by("experiment_id", as_dict=True, maintain_order=True).items():
        look_day = rows.get_column("as_of")[0].isoformat()
        mine = history_of(experiment_id)
        assigned = units_of(experiment_id)
        sessions = int(assigned.get_column("sessions").sum()) if assigned.height else None
        verified = int(assigned.get_column("verified_sessions").sum()) if assigned.height else None
        first = assigned.get_column("first_assigned_at").min() if assigned.height else None
        views.append(
            ExperimentView(
                registration=registrations[experiment_id],
                as_of=look_day,
                looks=mine.get_column("as_of").n_unique(),
                comparisons=rows,
                history=mine,
                quarantine=quarantine_of(experiment_id),
                breakdowns=breakdowns_of(experiment_id),
                sessions=sessions,
                verified_sessions=verified,
                uncounted_kinds={k: n for e, k, n in uncounted.iter_rows() if e == experiment_id},
                first_assigned_at=first.isoformat() if first is not None else None,
                assigned_units=dict(zip(assigned.get_column("arm").to_list(), assigned.get_column("units").to_list())),
                plan=plans.get(experiment_id, {}),
            )
        )
    return sort_views(views)


def _by_experiment(frame: pl.DataFrame, include_key: bool = True) -> Callable[[str], pl.DataFrame]:
    """The rows of one experiment, by id, from ``frame`` split once (an empty frame of its schema for none),
    with or without the ``experiment_id`` column."""
    parts = frame.partition_by("experiment_id", as_dict=True, maintain_order=True, include_key=include_key)
    empty = frame.clear() if include_key else frame.clear().drop("experiment_id")
    return lambda experiment_id: parts.get((experiment_id,), empty)


def sort_views(views: Sequence[ExperimentView]) -> list[ExperimentView]:
    """What needs attention first: the group of :data:`ATTENTION_ORDER` and the rank within it (the most
    severe alarm, or reject, adopt, no_effect, inconclusive: ``reports/alarms.py``), then own experiments
    first, then organization and id."""
    return sorted(views, key=lambda v: (*_alarms.attention_rank(v), not v.is_own, v.org_id, v.experiment_id))


def _quarantine(con: duckdb.DuckDBPyConnection, tables: set[str]) -> pl.DataFrame:
    schema = {"experiment_id": pl.String, "stage": pl.String, "source_table": pl.String, "rule": pl.String, "rows": pl.Int64}
    if not {"quarantine", "staged_assignments"} <= tables:
        return pl.DataFrame(schema=schema)
    return con.execute(load_sql("reports/count_experiment_quarantine")).pl().cast(schema)


def _uncounted_outcomes(con: duckdb.DuckDBPyConnection, latest: pl.DataFrame) -> pl.DataFrame:
    """Sessions with outcomes of no counted kind, per experiment and kind, as of each experiment's look."""
    schema = {"experiment_id": pl.String, "evaluator_kind": pl.String, "sessions": pl.Int64}
    frames = [pl.DataFrame(schema=schema)]
    if {"experience", "verification_records"} <= _tables(con):
        for day in latest.get_column("as_of").unique().to_list():
            ids = latest.filter(pl.col("as_of") == day).get_column("experiment_id").unique().to_list()
            counts = con.execute(load_sql("reports/count_uncounted_outcomes"), {"as_of_end": look_end(day.isoformat())}).pl()
            frames.append(counts.cast(schema).filter(pl.col("experiment_id").is_in(ids)))
    return pl.concat(frames)


def _assigned_units(con: duckdb.DuckDBPyConnection, latest: pl.DataFrame) -> pl.DataFrame:
    """Units, sessions and verified sessions per experiment and arm as of each experiment's look."""
    frames = []
    if {"experience_days", "look_assigned_days", "look_first_assignments"} <= _tables(con):
        for day in latest.get_column("as_of").unique().to_list():
            ids = latest.filter(pl.col("as_of") == day).get_column("experiment_id").unique().to_list()
            counts = con.execute(load_sql("reports/count_experiment_sessions"), {"as_of_end": look_end(day.isoformat())}).pl()
            frames.append(counts.filter(pl.col("experiment_id").is_in(ids)))
    schema = {"experiment_id": pl.String, "arm": pl.String, "units": pl.Int64, "sessions": pl.Int64,
              "verified_sessions": pl.Int64, "first_assigned_at": pl.Datetime(time_zone="UTC")}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat([f.cast({k: v for k, v in schema.items() if k != "first_assigned_at"}) for f in frames], how="diagonal_relaxed")
