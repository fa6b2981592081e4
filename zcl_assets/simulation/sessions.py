"""Simulate ZCL landing data with known true effects (for tests and demos).

:func:`simulate_sessions` writes JSON Lines landing files (docs/landing.md) for the tables
``experiments``, ``experiment_events``, ``sessions``, ``assignments``, ``outcomes`` and
``admission_events``, deterministic for a seed (numpy ``default_rng``): the same seed and
options give byte-identical files.

World (defaults):

* 3 organizations with 2-3 task types each; Poisson daily traffic per task type, session
  starts uniform over the day; returning users drawn from a per-organization pool with
  skewed (Zipf-like) activity and a per-user random effect on ``score``.
* 8 experiments registered at 00:00 UTC of the start date (before any assignment), each
  with an ``active`` event at registration:

  ========================== ============= ======================================== ==========
  experiment                 metric        truth                                    unit
  ========================== ============= ======================================== ==========
  sim-nw-bugfix-include      success       0.50 -> 0.62 (beneficial)                session
  sim-nw-bugfix-order        success       0.45 -> 0.45 (null; concurrent with ^)   session
  sim-nw-refactor-memory     time_minutes  40 -> 36, direction decrease             session
  sim-ct-bugfix-include      success       0.55 -> 0.45 (harmful)                   session
  sim-ct-analysis-order      success       0.50 -> 0.58, guardrail tokens +4000     session
                                           (margin 2000: the guardrail is breached)
  sim-in-support-order3      success       control 0.40, order_a 0.40 (null),       session
                                           order_b 0.50
  sim-in-triage-memory       score         0.60 -> 0.70, per-user random effect     user
  sim-in-docs-include        success       0.70 -> 0.70 (null, low traffic)         session
  ========================== ============= ======================================== ==========

  Metrics other than an experiment's primary metric and guardrails have no arm effect.
* ``outside_share`` (15%) of sessions are in no experiment; launched exploration admissions
  add sessions in no experiment, carrying their ``admission_id``.
* Outcomes: ``outcome_share`` (98%) of sessions have one. Evaluator provenance: 80%
  ``evaluator`` (``unit-tests`` 2.1), 10% ``human`` (``reviewer`` 1.0), 6% ``self_report``
  and 4% ``heuristic``; self reports and heuristics are optimistic (success probability
  +0.25, capped at 0.95), so they must not be used for decisions (they are kept).
* Context: each arm's context (doc ids and digest) is constant per experiment, so the
  control arm's digest never drifts.
* admission_events: exploration admissions following admitted -> consumed -> launched ->
  terminal (outcome productive / unproductive / failed), with some blocked after
  consumption and some stalled at admitted or consumed (seed note 001).

Dirty rows are injected as *extra* rows (clean rows are untouched, except one outcome of a
session outside every experiment that gets negative tokens), counted exactly in
``SimulationSummary.dirty_rows``:

* ``malformed_json``: a truncated JSON line in a sessions file;
* ``missing_required_field``: an outcome line without ``session_id``;
* ``negative_tokens``: an outcome with ``tokens < 0``;
* ``unparseable_timestamp``: a session whose ``started_at`` cannot be parsed (landed in the
  start date's folder);
* ``unknown_arm``: an assignment to an arm the experiment does not declare;
* ``duplicate_assignment``: a second assignment of an assigned (session, experiment) pair,
  to the other arm;
* ``delivered_arm_mismatch``: sessions whose ``delivered_arm`` differs from their
  assignment;
* ``outcome_before_assignment``: an outcome recorded before its session's assignment.

Naive timestamps (no UTC offset) are **not** dirty (UTC by contract): a few sessions outside
every experiment are written with naive ``started_at``; their number is
``SimulationSummary.naive_timestamps``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.importers.landing_writer import write_landing

UTC = _dt.timezone.utc

ORGS: dict[str, dict[str, float]] = {
    "northwind": {"bugfix": 110.0, "refactor": 60.0, "docs": 30.0},
    "contoso": {"bugfix": 70.0, "data_analysis": 60.0},
    "initech": {"support": 90.0, "triage": 50.0, "docs": 25.0},
}
USERS_PER_ORG = 250
MODELS = ("model-a", "model-b", "model-c")
EXPLORATION_ARMS = ("gptme:model-a", "gptme:model-b", "aider:model-c", "claude-code:model-d")

# default metric distributions (no arm effect)
DEFAULT_MEANS = {"success": 0.60, "time_minutes": 25.0, "tokens": 15000.0, "score": 0.60}
GAMMA_SHAPE = {"time_minutes": 6.25, "tokens": 6.25}  # coefficient of variation 0.4
SCORE_NOISE_SD = 0.20
USER_EFFECT_SD = 0.15

EVALUATORS = (  # kind, id, version, share
    ("evaluator", "unit-tests", "2.1", 0.80),
    ("human", "reviewer", "1.0", 0.10),
    ("self_report", "agent-self-report", "1", 0.06),
    ("heuristic", "log-heuristic", "0.3", 0.04),
)
NON_AUTHORITATIVE_SUCCESS_BIAS = 0.25

DIRTY_KINDS = (
    "malformed_json",
    "missing_required_field",
    "negative_tokens",
    "unparseable_timestamp",
    "unknown_arm",
    "duplicate_assignment",
    "delivered_arm_mismatch",
    "outcome_before_assignment",
)


@dataclass(frozen=True)
class ExperimentTruth:
    """A simulated experiment's registration and its true per-arm means."""

    experiment_id: str
    org_id: str
    task_type: str
    kind: str
    primary_metric: str
    direction: str
    control_arm: str
    arms: tuple[str, ...]
    randomization_unit: str
    label: str
    arm_means: dict[str, float]
    """true mean of the primary metric per arm"""
    effects: dict[str, float]
    """treatment arm -> true difference (treatment - control) of the primary metric"""
    guardrails: list[dict] = field(default_factory=list)
    guardrail_effects: dict[str, dict[str, float]] = field(default_factory=dict)
    """guardrail metric -> treatment arm -> true difference (treatment - control)"""
    mde: float = 0.0
    baseline_sd: float | None = None
    min_samples_per_arm: int = 100


@dataclass(frozen=True)
class SimulationSummary:
    """What :func:`simulate_sessions` wrote and the truth behind it."""

    seed: int
    start: str
    days: int
    landing_dir: Path
    files_written: list[Path]
    records_written: dict[str, int]
    """lines written per table, dirty lines included"""
    experiments: dict[str, ExperimentTruth]
    true_effects: dict[str, dict[str, float]]
    """experiment id -> treatment arm -> true effect on the primary metric"""
    dirty_rows: dict[str, int]
    naive_timestamps: int
    sessions_in_experiments: int
    sessions_outside_experiments: int
    admissions: dict[str, int]
    """admissions by the last state reached (admitted, consumed, blocked, launched,
    terminal), plus ``total`` and ``productive``"""


@dataclass
class _Spec:
    experiment_id: str
    org_id: str
    task_type: str
    kind: str
    label: str
    primary_metric: str
    direction: str
    arms: list[tuple[str, dict]]
    arm_means: dict[str, float]
    mde: float
    min_samples_per_arm: int = 200
    randomization_unit: str = "session"
    guardrails: list[dict] = field(default_factory=list)
    guardrail_means: dict[str, dict[str, float]] = field(default_factory=dict)
    control_arm: str = "control"
    hypothesis: str = ""

    def mean(self, arm: str, metric: str) -> float:
        if metric == self.primary_metric:
            return self.arm_means[arm]
        if metric in self.guardrail_means:
            return self.guardrail_means[metric][arm]
        return DEFAULT_MEANS[metric]

    def baseline_sd(self) -> float | None:
        m = self.primary_metric
        base = self.arm_means[self.control_arm]
        if m == "success":
            return None
        if m == "score":
            return float(np.sqrt(SCORE_NOISE_SD**2 + USER_EFFECT_SD**2))
        return float(base / np.sqrt(GAMMA_SHAPE[m]))


def _experiments() -> list[_Spec]:
    return [
        _Spec("sim-nw-bugfix-include", "northwind", "bugfix", "inclusion", "beneficial",
              "success", "increase",
              [("control", {"include": []}), ("treatment", {"include": ["doc-bugfix-runbook"]})],
              {"control": 0.50, "treatment": 0.62}, mde=0.08, min_samples_per_arm=300,
              hypothesis="Including the bugfix runbook raises the success rate."),
        _Spec("sim-nw-bugfix-order", "northwind", "bugfix", "order", "null",
              "success", "increase",
              [("control", {"order": ["doc-bugfix-1", "doc-bugfix-2", "doc-bugfix-3"]}),
               ("treatment", {"order": ["doc-bugfix-3", "doc-bugfix-1", "doc-bugfix-2"]})],
              {"control": 0.45, "treatment": 0.45}, mde=0.08, min_samples_per_arm=300,
              hypothesis="Putting the test guide first raises the success rate."),
        _Spec("sim-nw-refactor-memory", "northwind", "refactor", "memory_mode", "beneficial",
              "time_minutes", "decrease",
              [("control", {"memory": "off"}), ("treatment", {"memory": "on"})],
              {"control": 40.0, "treatment": 36.0}, mde=4.0, min_samples_per_arm=200,
              hypothesis="Recalled memory shortens refactoring sessions."),
        _Spec("sim-ct-bugfix-include", "contoso", "bugfix", "inclusion", "harmful",
              "success", "increase",
              [("control", {"include": []}), ("treatment", {"include": ["doc-legacy-wiki"]})],
              {"control": 0.55, "treatment": 0.45}, mde=0.08, min_samples_per_arm=300,
              hypothesis="Including the legacy wiki raises the success rate."),
        _Spec("sim-ct-analysis-order", "contoso", "data_analysis", "order", "beneficial_guardrail",
              "success", "increase",
              [("control", {"order": ["doc-sql-1", "doc-schema-2"]}),
               ("treatment", {"order": ["doc-schema-2", "doc-sql-1", "doc-examples-3"]})],
              {"control": 0.50, "treatment": 0.58}, mde=0.08, min_samples_per_arm=300,
              guardrails=[{"metric": "tokens", "direction": "decrease", "margin": 2000.0}],
              guardrail_means={"tokens": {"control": 20000.0, "treatment": 24000.0}},
              hypothesis="Schema first plus examples raises the success rate within the "
                         "token budget."),
        _Spec("sim-in-support-order3", "initech", "support", "order", "three_arm",
              "success", "increase",
              [("control", {"order": ["doc-faq", "doc-policy"]}),
               ("order_a", {"order": ["doc-policy", "doc-faq"]}),
               ("order_b", {"order": ["doc-policy", "doc-faq", "doc-escalation"]})],
              {"control": 0.40, "order_a": 0.40, "order_b": 0.50}, mde=0.08,
              min_samples_per_arm=300,
              hypothesis="Policy-first orderings raise the support success rate."),
        _Spec("sim-in-triage-memory", "initech", "triage", "memory_mode", "user_randomized",
              "score", "increase",
              [("control", {"memory": "off"}), ("treatment", {"memory": "on"})],
              {"control": 0.60, "treatment": 0.70}, mde=0.05, min_samples_per_arm=100,
              randomization_unit="user",
              hypothesis="Recalled memory raises the triage score of returning users."),
        _Spec("sim-in-docs-include", "initech", "docs", "inclusion", "null",
              "success", "increase",
              [("control", {"include": []}), ("treatment", {"include": ["doc-style-guide"]})],
              {"control": 0.70, "treatment": 0.70}, mde=0.08, min_samples_per_arm=300,
              hypothesis="Including the style guide raises the docs success rate."),
    ]


def _iso(sec: float) -> str:
    return _dt.datetime.fromtimestamp(int(sec), UTC).isoformat()


def _digest(docs: list[str], payload: dict) -> str:
    text = json.dumps({"docs": docs, "payload": payload}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _arm_docs(task_type: str, kind: str, payload: dict) -> list[str]:
    base = [f"doc-{task_type}-{k}" for k in (1, 2, 3)]
    if kind == "inclusion":
        return base + list(payload.get("include", []))
    if kind == "order":
        return list(payload["order"])
    if kind == "memory_mode":
        return base + ([f"mem-{task_type}"] if payload.get("memory") == "on" else [])
    return base


class _Population(NamedTuple):
    """Who works where: each organization's users, the coin of user-randomized experiments, each arm's context."""

    users: dict[str, tuple[list[str], np.ndarray, np.ndarray]]  # org -> (ids, activity weights, score effects)
    user_arm: dict[str, dict[str, str]]  # experiment -> user -> arm
    arm_context: dict[tuple[str, str], tuple[list[str], str]]  # (experiment, arm) -> (doc ids, digest)


def _population(rng: np.random.Generator, specs: list[_Spec]) -> _Population:
    """Per-organization user pools with skewed activity and a random effect on score; a coin
    per user for user-randomized experiments (drawn once per user)."""
    users: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
    for org in ORGS:
        ids = [f"user-{org}-{k:04d}" for k in range(USERS_PER_ORG)]
        w = 1.0 / np.arange(1, USERS_PER_ORG + 1) ** 0.8
        users[org] = (ids, w / w.sum(), rng.normal(0.0, USER_EFFECT_SD, USERS_PER_ORG))
    user_arm: dict[str, dict[str, str]] = {}
    for s in specs:
        if s.randomization_unit == "user":
            names = [a for a, _ in s.arms]
            coins = rng.integers(0, len(names), USERS_PER_ORG)
            user_arm[s.experiment_id] = {users[s.org_id][0][k]: names[c] for k, c in enumerate(coins)}
    arm_context = {
        (s.experiment_id, a): (_arm_docs(s.task_type, s.kind, p), _digest(_arm_docs(s.task_type, s.kind, p), p))
        for s in specs for a, p in s.arms
    }
    return _Population(users, user_arm, arm_context)


def _traffic(rng: np.random.Generator, specs: list[_Spec], people: _Population, t0: float, days: int,
             traffic_scale: float, outside_share: float) -> list[dict]:
    """Sessions of every task type and day (Poisson counts, starts uniform over the day), each
    in one of its task type's experiments unless outside every one; numeric times, no ids yet."""
    by_task: dict[tuple[str, str], list[_Spec]] = {}
    for s in specs:
        by_task.setdefault((s.org_id, s.task_type), []).append(s)
    raw: list[dict] = []
    for day in range(days):
        for org, tasks in ORGS.items():
            ids, weights, _ = people.users[org]
            for task, rate in tasks.items():
                n = int(rng.poisson(rate * traffic_scale))
                if n == 0:
                    continue
                offs = np.sort(rng.uniform(60.0, 86400.0, n))
                who = rng.choice(USERS_PER_ORG, size=n, p=weights)
                outside = rng.random(n) < outside_share
                pick = rng.random(n)
                coin = rng.random(n)
                for j in range(n):
                    rec = {"t": t0 + day * 86400 + float(np.floor(offs[j])), "org_id": org, "task_type": task,
                           "user": int(who[j]), "user_id": ids[who[j]], "experiment": None, "arm": None,
                           "admission_id": None}
                    exps = by_task.get((org, task), [])
                    if exps and not outside[j]:
                        spec = exps[int(pick[j] * len(exps))]
                        if spec.randomization_unit == "user":
                            arm = people.user_arm[spec.experiment_id][rec["user_id"]]
                        else:
                            names = [a for a, _ in spec.arms]
                            arm = names[int(coin[j] * len(names))]
                        rec["experiment"], rec["arm"] = spec, arm
                    raw.append(rec)
    return raw


class _Funnel(NamedTuple):
    """The exploration admissions (seed note 001): lifecycle rows and their last states."""

    rows: list[dict]  # numeric times; a terminal row's time follows its session's end
    final: dict[str, int]


def _admission(rng: np.random.Generator, aid: str, t: float) -> tuple[list[tuple], str]:
    """One admission's lifecycle from ``t``: events ``(state, at, launch key, outcome)`` and its last state."""
    u = rng.random(5)
    events = [("admitted", t, None, None)]
    if u[0] < 0.15:  # 15% never consumed (stalled at admitted)
        return events, "admitted"
    t += float(np.floor(1 + u[1] * 600))
    events.append(("consumed", t, None, None))
    if u[2] < 0.20:  # arm rejected after consumption
        events.append(("blocked", t + 5, None, None))
        return events, "blocked"
    if u[2] < 0.35:  # runner died before launch (stalled at consumed)
        return events, "consumed"
    t += float(np.floor(1 + u[3] * 120))
    events.append(("launched", t, f"{aid}-session", None))
    return events, ("terminal" if u[4] < 0.95 else "launched")


def _admissions(rng: np.random.Generator, people: _Population, t0: float, days: int, per_day: float,
                raw: list[dict]) -> _Funnel:
    """Admissions of the organizations that explore; a launched one adds its session to ``raw``."""
    rows: list[dict] = []
    final = {k: 0 for k in ("admitted", "consumed", "blocked", "launched", "terminal")}
    productive = counter = 0
    for day in range(days):
        for org in ("northwind", "contoso"):
            task = next(iter(ORGS[org]))
            for _ in range(int(rng.poisson(per_day))):
                counter += 1
                aid = f"adm-{counter:05d}"
                arm = EXPLORATION_ARMS[int(rng.integers(0, len(EXPLORATION_ARMS)))]
                events, last = _admission(rng, aid, t0 + day * 86400 + float(np.floor(rng.uniform(120.0, 80000.0))))
                if last in ("launched", "terminal"):
                    ids, weights, _ = people.users[org]
                    who = int(rng.choice(USERS_PER_ORG, p=weights))
                    raw.append({"t": events[-1][1], "org_id": org, "task_type": task, "user": who, "user_id": ids[who],
                                "experiment": None, "arm": None, "admission_id": aid, "launch_key": events[-1][2]})
                if last == "terminal":
                    r = rng.random()
                    outcome = "productive" if r < 0.2 else "unproductive" if r < 0.7 else "failed"
                    productive += outcome == "productive"
                    events.append(("terminal", None, events[-1][2], outcome))
                final[last] += 1
                rows.extend({"admission_id": aid, "org_id": org, "task_type": task, "state": state, "at": at, "arm": arm,
                             "session_key": sid, "outcome": outcome} for state, at, sid, outcome in events)
    final["total"], final["productive"] = counter, productive
    return _Funnel(rows, final)


class _Records(NamedTuple):
    """The clean rows of the landing tables written from the sessions."""

    sessions: list[dict]
    assignments: list[dict]
    outcomes: list[dict]
    session_end: dict[str, float]


def _records(rng: np.random.Generator, raw: list[dict], people: _Population, outcome_share: float) -> _Records:
    """Metrics, evaluator provenance, context and lags of every session, as landing rows."""
    n = len(raw)
    u_succ = rng.random(n)
    g_time = rng.standard_gamma(GAMMA_SHAPE["time_minutes"], n)
    g_tok = rng.standard_gamma(GAMMA_SHAPE["tokens"], n)
    z_score = rng.normal(0.0, SCORE_NOISE_SD, n)
    has_outcome = rng.random(n) < outcome_share
    ev_pick = rng.random(n)
    assign_lag = rng.integers(1, 6, n)
    record_lag = rng.integers(5, 301, n)
    model_pick = rng.integers(0, len(MODELS), n)
    outside_docs = rng.integers(2, 4, n)
    ev_cum = np.cumsum([e[3] for e in EVALUATORS])
    out = _Records([], [], [], {})
    for i, r in enumerate(raw):
        spec: _Spec | None = r["experiment"]
        arm = r["arm"]

        def mean(metric: str) -> float:
            return spec.mean(arm, metric) if spec is not None else DEFAULT_MEANS[metric]

        minutes = round(float(g_time[i] * mean("time_minutes") / GAMMA_SHAPE["time_minutes"]), 2)
        tokens = float(round(g_tok[i] * mean("tokens") / GAMMA_SHAPE["tokens"]))
        score = round(float(mean("score") + people.users[r["org_id"]][2][r["user"]] + z_score[i]), 4)
        kind_idx = min(int(np.searchsorted(ev_cum, ev_pick[i] * ev_cum[-1], side="right")), len(EVALUATORS) - 1)
        ev_kind, ev_id, ev_ver, _ = EVALUATORS[kind_idx]
        p = mean("success")
        if ev_kind in ("self_report", "heuristic"):
            p = min(0.95, p + NON_AUTHORITATIVE_SUCCESS_BIAS)
        start_t = r["t"]
        end_t = start_t + round(minutes * 60)
        out.session_end[r["session_id"]] = end_t
        if spec is not None:
            docs, digest = people.arm_context[(spec.experiment_id, arm)]
        else:
            docs = [f"doc-{r['task_type']}-{k}" for k in range(1, int(outside_docs[i]) + 1)]
            digest = _digest(docs, {})
        out.sessions.append({
            "session_id": r["session_id"], "org_id": r["org_id"], "user_id": r["user_id"],
            "task_type": r["task_type"], "model": MODELS[int(model_pick[i])],
            "budget": 50000.0, "started_at": _iso(start_t), "ended_at": _iso(end_t),
            "context_doc_ids": docs, "context_digest": digest,
            "experiment_id": spec.experiment_id if spec else None,
            "delivered_arm": arm, "admission_id": r["admission_id"],
        })
        if spec is not None:
            out.assignments.append({
                "session_id": r["session_id"], "experiment_id": spec.experiment_id, "arm": arm,
                "unit_id": r["user_id"] if spec.randomization_unit == "user" else r["session_id"],
                "assigned_at": _iso(start_t - int(assign_lag[i])),
            })
        if has_outcome[i] or r["admission_id"] is not None:
            out.outcomes.append({
                "session_id": r["session_id"], "success": bool(u_succ[i] < p), "time_minutes": minutes,
                "tokens": tokens, "score": score, "recorded_at": _iso(end_t + int(record_lag[i])),
                "evaluator_id": ev_id, "evaluator_version": ev_ver, "evaluator_kind": ev_kind,
            })
    return out


def _admission_rows(funnel: _Funnel, launch_sid: dict[str, str], session_end: dict[str, float]) -> list[dict]:
    """The admission events as landing rows, in time order (a terminal event 30 s after its session ends)."""
    rows = []
    for row in funnel.rows:
        key = row["session_key"]
        sid = launch_sid.get(key) if key else None
        at = row["at"] if row["at"] is not None else session_end[sid] + 30
        rows.append({"admission_id": row["admission_id"], "org_id": row["org_id"], "task_type": row["task_type"],
                     "state": row["state"], "at": _iso(at), "arm": row["arm"], "session_id": sid,
                     "outcome": row["outcome"]})
    return sorted(rows, key=lambda r: (r["at"], r["admission_id"]))


def _extra_session(records: _Records, people: _Population, sid: str, spec: _Spec | None, delivered: str | None, t: float,
                   started_text: str | None = None) -> None:
    docs, digest = (people.arm_context.get((spec.experiment_id, delivered),
                                           people.arm_context[(spec.experiment_id, spec.control_arm)])
                    if spec else ([], ""))
    records.sessions.append({
        "session_id": sid, "org_id": spec.org_id if spec else "northwind",
        "user_id": "user-dirty-0001", "task_type": spec.task_type if spec else "docs",
        "model": MODELS[0], "budget": 50000.0,
        "started_at": started_text or _iso(t), "ended_at": _iso(t + 600),
        "context_doc_ids": docs, "context_digest": digest,
        "experiment_id": spec.experiment_id if spec else None,
        "delivered_arm": delivered, "admission_id": None,
    })


def _extra_outcome(records: _Records, sid: str, t: float) -> None:
    records.outcomes.append({"session_id": sid, "success": True, "time_minutes": 10.0, "tokens": 12000.0, "score": 0.6,
                             "recorded_at": _iso(t), "evaluator_id": "unit-tests", "evaluator_version": "2.1",
                             "evaluator_kind": "evaluator"})


def _negative_tokens(records: _Records, outside_idx: list[int], dirty: dict[str, int]) -> None:
    """Negative tokens on an outcome of a session outside every experiment (one more outcome if it has none)."""
    if not outside_idx:
        return
    target = records.sessions[outside_idx[0]]
    for o in records.outcomes:
        if o["session_id"] == target["session_id"]:
            o["tokens"] = -1200.0
            dirty["negative_tokens"] += 1
            return
    records.outcomes.append({"session_id": target["session_id"], "success": True, "time_minutes": 5.0, "tokens": -1200.0,
                             "score": 0.5, "recorded_at": target["ended_at"], "evaluator_id": "unit-tests",
                             "evaluator_version": "2.1", "evaluator_kind": "evaluator"})
    dirty["negative_tokens"] += 1


def _dirty_sessions(records: _Records, people: _Population, specs: dict[str, _Spec], at: float,
                    dirty: dict[str, int]) -> None:
    """Extra sessions, assignments and outcomes that break one contract rule each, from ``at`` on."""
    _extra_session(records, people, "ses-dirty-ts", None, None, at + 3600, started_text="2026-10-3?T25:61:00+00:00")
    dirty["unparseable_timestamp"] += 1
    docs_spec = specs["sim-in-docs-include"]  # an arm the experiment does not declare, then an early outcome
    for sid, arm, t, outcome_at in (("ses-dirty-arm", "treatment_z", at + 7200, at + 7900),
                                    ("ses-dirty-early", "control", at + 10800, at + 10200)):
        _extra_session(records, people, sid, docs_spec, arm, t)
        records.assignments.append({"session_id": sid, "experiment_id": docs_spec.experiment_id, "arm": arm,
                                    "unit_id": sid, "assigned_at": _iso(t - 2)})
        _extra_outcome(records, sid, outcome_at)
    dirty["unknown_arm"] += 1
    dirty["outcome_before_assignment"] += 1
    order_spec = specs["sim-nw-bugfix-order"]  # delivered arm differs from the assignment (null experiment)
    for k in range(2):
        t = at + 14400 + 3600 * k
        sid = f"ses-dirty-mismatch-{k + 1}"
        _extra_session(records, people, sid, order_spec, "treatment", t)
        records.assignments.append({"session_id": sid, "experiment_id": order_spec.experiment_id, "arm": "control",
                                    "unit_id": sid, "assigned_at": _iso(t - 2)})
        _extra_outcome(records, sid, t + 700)
        dirty["delivered_arm_mismatch"] += 1
    # duplicate (session, experiment) assignment, to the other arm (the mismatch sessions above
    # are assigned to this experiment, so one exists)
    first = next(a for a in records.assignments if a["experiment_id"] == order_spec.experiment_id)
    dup = dict(first)
    dup["arm"] = "treatment" if first["arm"] == "control" else "control"
    dup["assigned_at"] = _iso(_dt.datetime.fromisoformat(first["assigned_at"]).timestamp() + 1)
    records.assignments.append(dup)
    dirty["duplicate_assignment"] += 1


def _dirty_lines(at: float, mid_day: str, dirty: dict[str, int]) -> dict[tuple[str, str], list[str]]:
    """Raw lines appended to existing files: a truncated JSON line and an outcome without its session."""
    dirty["malformed_json"] += 1
    dirty["missing_required_field"] += 1
    return {
        ("sessions", mid_day): ['{"schema_version":1,"session_id":"ses-dirty-json","org_id":"northwind","user_id":'],
        ("outcomes", mid_day): [json.dumps({
            "schema_version": 1, "success": False, "time_minutes": 12.0, "tokens": 9000.0, "score": 0.4,
            "recorded_at": _iso(at + 20000), "evaluator_id": "unit-tests", "evaluator_version": "2.1",
            "evaluator_kind": "evaluator"}, separators=(",", ":"))],
    }


def _registrations(specs: list[_Spec], t0: float) -> tuple[list[dict], list[dict], dict[str, ExperimentTruth]]:
    """Registration rows (equal shares, registered at the start), their ``active`` events, and the truth."""
    reg_at = _iso(t0)
    experiments_rows, events_rows, truths = [], [], {}
    for s in specs:
        names = [a for a, _ in s.arms]
        share = 1.0 / len(names)
        experiments_rows.append({
            "experiment_id": s.experiment_id, "org_id": s.org_id, "task_type": s.task_type,
            "kind": s.kind, "hypothesis": s.hypothesis,
            "arms": json.dumps([{"name": a, "payload": p, "allocation": share} for a, p in s.arms], separators=(",", ":")),
            "control_arm": s.control_arm, "primary_metric": s.primary_metric,
            "direction": s.direction, "mde": float(s.mde), "alpha": 0.05, "power": 0.8,
            "baseline_mean": float(s.arm_means[s.control_arm]), "baseline_sd": s.baseline_sd(),
            "min_samples_per_arm": s.min_samples_per_arm,
            "randomization_unit": s.randomization_unit, "sessions_per_unit": "many",
            "guardrails": json.dumps(s.guardrails, separators=(",", ":")),
            "metric_caps": json.dumps({"time_minutes": 240.0, "tokens": 200000.0}, separators=(",", ":")),
            "expected_verified_share": 1.0, "registered_at": reg_at,
        })
        events_rows.append({"experiment_id": s.experiment_id, "status": "active", "at": reg_at, "reason": "registered"})
        ctrl = s.arm_means[s.control_arm]
        truths[s.experiment_id] = ExperimentTruth(
            experiment_id=s.experiment_id, org_id=s.org_id, task_type=s.task_type,
            kind=s.kind, primary_metric=s.primary_metric, direction=s.direction,
            control_arm=s.control_arm, arms=tuple(names),
            randomization_unit=s.randomization_unit, label=s.label,
            arm_means=dict(s.arm_means),
            effects={a: round(s.arm_means[a] - ctrl, 12) for a in names if a != s.control_arm},
            guardrails=list(s.guardrails),
            guardrail_effects={m: {a: v[a] - v[s.control_arm] for a in names if a != s.control_arm}
                               for m, v in s.guardrail_means.items()},
            mde=s.mde, baseline_sd=s.baseline_sd(), min_samples_per_arm=s.min_samples_per_arm,
        )
    return experiments_rows, events_rows, truths


def _frames(experiments_rows: list[dict], events_rows: list[dict], records: _Records,
            admission_rows: list[dict]) -> dict[str, tuple[pl.DataFrame, str, list[str]]]:
    """Each landing table's frame, the column that dates its rows, and its JSON columns."""
    return {
        "experiments": (pl.DataFrame(experiments_rows, schema_overrides={"baseline_sd": pl.Float64}),
                        "registered_at", ["arms", "guardrails", "metric_caps"]),
        "experiment_events": (pl.DataFrame(events_rows), "at", []),
        "sessions": (pl.DataFrame(records.sessions, schema_overrides={
            "experiment_id": pl.String, "delivered_arm": pl.String, "admission_id": pl.String,
            "context_doc_ids": pl.List(pl.String)}), "started_at", []),
        "assignments": (pl.DataFrame(records.assignments), "assigned_at", []),
        "outcomes": (pl.DataFrame(records.outcomes), "recorded_at", []),
        "admission_events": (pl.DataFrame(admission_rows, schema_overrides={
            "session_id": pl.String, "outcome": pl.String}), "at", []),
    }


def _write(frames: dict[str, tuple[pl.DataFrame, str, list[str]]], landing: Path, name: str, start_date: _dt.date,
           extra_lines: dict[tuple[str, str], list[str]]) -> tuple[list[Path], dict[str, int]]:
    """Write each table's JSON Lines files by UTC day; lines written per table, extra lines included."""
    files: list[Path] = []
    records: dict[str, int] = {}
    for table, (df, tcol, jcols) in frames.items():
        extra = {day: lines for (t, day), lines in extra_lines.items() if t == table}
        w = write_landing(df, landing, table, time_column=tcol, name=name, json_columns=jcols,
                          fallback_day=start_date, extra_lines=extra)
        records[table] = w.rows + sum(len(lines) for lines in extra.values())
        files.extend(w.files)
    return files, records


def simulate_sessions(
    landing_dir: str | os.PathLike[str],
    *,
    seed: int = 20261129,
    start: str | _dt.date = "2026-10-01",
    days: int = 45,
    traffic_scale: float = 1.0,
    outside_share: float = 0.15,
    outcome_share: float = 0.98,
    naive_timestamps: int = 5,
    inject_dirty: bool = True,
    admissions_per_day: float = 3.0,
) -> SimulationSummary:
    """Write simulated landing data into ``landing_dir`` and return the truth behind it.

    Options (defaults and why):

    * ``seed=20261129``: any fixed seed; the same seed gives byte-identical files.
    * ``start="2026-10-01"``, ``days=45``: six weeks of nightly looks, long enough for the
      high-traffic experiments to pass their planned samples and for the low-traffic one
      (``sim-in-docs-include``) not to.
    * ``traffic_scale=1.0``: multiplies every task type's daily rate (about 22k sessions in
      total by default, several hundred to ~1,500 per arm).
    * ``outside_share=0.15``: sessions not in any experiment.
    * ``outcome_share=0.98``: sessions with an outcome (missing at random, both arms alike).
    * ``naive_timestamps=5``: sessions outside experiments written with a naive
      ``started_at`` (UTC by contract, not dirty).
    * ``inject_dirty=True``: add the dirty rows listed in the module docstring.
    * ``admissions_per_day=3.0``: Poisson rate of exploration admissions per organization
      with admissions (northwind and contoso).

    Files are ``<landing>/<table>/<day>/simulation-<seed>.jsonl``.
    """
    rng = np.random.default_rng(seed)
    start_date = _dt.date.fromisoformat(start) if isinstance(start, str) else start
    t0 = _dt.datetime(start_date.year, start_date.month, start_date.day, tzinfo=UTC).timestamp()
    specs = _experiments()
    people = _population(rng, specs)
    raw = _traffic(rng, specs, people, t0, days, traffic_scale, outside_share)
    funnel = _admissions(rng, people, t0, days, admissions_per_day, raw)
    # order sessions by start time and number them
    raw.sort(key=lambda r: (r["t"], r["org_id"], r["task_type"], r["user"]))
    launch_sid: dict[str, str] = {}
    for i, r in enumerate(raw, start=1):
        r["session_id"] = f"ses-{i:06d}"
        if "launch_key" in r:
            launch_sid[r["launch_key"]] = r["session_id"]
    records = _records(rng, raw, people, outcome_share)
    admission_rows = _admission_rows(funnel, launch_sid, records.session_end)
    dirty = {k: 0 for k in DIRTY_KINDS}
    outside_idx = [i for i, s in enumerate(records.sessions) if s["experiment_id"] is None and s["admission_id"] is None]
    for i in outside_idx[5:5 + naive_timestamps]:
        records.sessions[i]["started_at"] = records.sessions[i]["started_at"].replace("+00:00", "")
    extra_lines: dict[tuple[str, str], list[str]] = {}
    if inject_dirty:
        mid = min(days - 1, 10)
        at = t0 + mid * 86400
        _negative_tokens(records, outside_idx, dirty)
        _dirty_sessions(records, people, {s.experiment_id: s for s in specs}, at, dirty)
        extra_lines = _dirty_lines(at, (start_date + _dt.timedelta(days=mid)).isoformat(), dirty)
    experiments_rows, events_rows, truths = _registrations(specs, t0)
    frames = _frames(experiments_rows, events_rows, records, admission_rows)
    files, written = _write(frames, Path(landing_dir), f"simulation-{seed}", start_date, extra_lines)
    in_exp = sum(1 for r in raw if r["experiment"] is not None)
    return SimulationSummary(
        seed=seed, start=start_date.isoformat(), days=days, landing_dir=Path(landing_dir),
        files_written=sorted(files), records_written=written, experiments=truths,
        true_effects={k: dict(v.effects) for k, v in truths.items()},
        dirty_rows=dirty, naive_timestamps=len(outside_idx[5:5 + naive_timestamps]),
        sessions_in_experiments=in_exp, sessions_outside_experiments=len(raw) - in_exp,
        admissions=funnel.final,
    )
