"""Memory-on/off runs with a known Experience Gain (seed note 002, section 15).

:func:`simulate_memory_runs` registers one ``memory_mode`` experiment per task (control arm
``recall_off``, payload ``{"memory": "off"}``; treatment ``recall_on``, ``{"memory": "on"}``;
primary metric ``score``, direction ``increase``) and writes its sessions, assignments and
authoritative outcomes as landing files. Each session is randomized to an arm (exactly
``runs_per_arm`` per arm, shuffled); its score is ``baseline + user effect + true gain (recall
on) + noise``, noise normal with sd ``score_sd``; model and budget are drawn independently of
the arm. Deterministic for a seed (numpy ``default_rng``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from zcl_assets.importers.landing_writer import write_landing

UTC = _dt.UTC
DEFAULT_TASKS: dict[str, float] = {"routing": 0.08, "summarize": 0.10, "codegen": 0.06}
"""Task type -> true Experience Gain on the score (the bundled data)."""


@dataclass(frozen=True)
class MemoryRuns:
    """What :func:`simulate_memory_runs` wrote and the truth behind it."""

    org_id: str
    true_gains: dict[str, float]
    """task type -> true gain (recall on minus off, score units)"""
    experiment_ids: dict[str, str]
    """task type -> experiment id"""
    runs_per_arm: int
    records_written: dict[str, int]
    files_written: list[Path]


@dataclass(frozen=True)
class RunDesign:
    """How the runs of every task are drawn.

    Attributes:
        days: UTC days the runs spread over from the start.
        baseline: mean score without recall.
        score_sd: sd of the score's noise.
        user_sd: sd of a per-user effect on the score (users drawn uniformly).
        users: users the runs are drawn from.
        min_samples_per_arm: the registered minimum.
        models, budgets: drawn independently of the arm.
    """

    days: int = 14
    baseline: float = 0.60
    score_sd: float = 0.20
    user_sd: float = 0.0
    users: int = 200
    min_samples_per_arm: int = 100
    models: tuple[str, ...] = ("model-a", "model-b")
    budgets: tuple[float, ...] = (50000.0,)


def _rows(rng: np.random.Generator, experiment_id: str, org_id: str, task: str, gain: float, start: _dt.datetime,
          runs_per_arm: int, design: RunDesign) -> dict[str, list[dict]]:
    """The sessions, assignments and outcomes of one task's experiment."""
    n = 2 * runs_per_arm
    on = rng.permutation(np.repeat([False, True], runs_per_arm))
    offsets = np.sort(rng.uniform(3600.0, design.days * 86400.0 - 3600.0, n))
    user = rng.integers(0, design.users, n)
    user_effect = rng.normal(0.0, design.user_sd, design.users)
    noise = rng.normal(0.0, design.score_sd, n)
    model = rng.integers(0, len(design.models), n)
    budget = rng.integers(0, len(design.budgets), n)
    minutes = rng.gamma(6.25, 25.0 / 6.25, n)
    tokens = rng.gamma(6.25, 15000.0 / 6.25, n)
    success = rng.random(n) < 0.6
    out: dict[str, list[dict]] = {"sessions": [], "assignments": [], "outcomes": []}
    for i in range(n):
        sid = f"{experiment_id}-{i + 1:05d}"
        t = start + _dt.timedelta(seconds=float(np.floor(offsets[i])))
        end = t + _dt.timedelta(minutes=float(round(minutes[i], 2)))
        arm = "recall_on" if on[i] else "recall_off"
        out["sessions"].append({
            "session_id": sid, "org_id": org_id, "user_id": f"user-{org_id}-{int(user[i]):04d}", "task_type": task,
            "model": design.models[int(model[i])], "budget": design.budgets[int(budget[i])], "started_at": t,
            "ended_at": end, "context_doc_ids": [f"doc-{task}-1", f"doc-{task}-2"] + ([f"mem-{task}"] if on[i] else []),
            "context_digest": f"{experiment_id}-{arm}", "experiment_id": experiment_id, "delivered_arm": arm,
            "admission_id": None,
        })
        out["assignments"].append({"session_id": sid, "experiment_id": experiment_id, "arm": arm, "unit_id": sid,
                                   "assigned_at": t - _dt.timedelta(seconds=2)})
        score = design.baseline + user_effect[int(user[i])] + (gain if on[i] else 0.0) + noise[i]
        out["outcomes"].append({
            "session_id": sid, "success": bool(success[i]), "time_minutes": float(round(minutes[i], 2)),
            "tokens": float(round(tokens[i])), "score": float(round(score, 5)), "recorded_at": end + _dt.timedelta(minutes=5),
            "evaluator_id": "unit-tests", "evaluator_version": "2.1", "evaluator_kind": "evaluator",
        })
    return out


def _registration(experiment_id: str, org_id: str, task: str, t0: _dt.datetime, design: RunDesign) -> dict:
    """The ``memory_mode`` registration of one task."""
    arms = [{"name": "recall_off", "payload": {"memory": "off"}, "allocation": 0.5},
            {"name": "recall_on", "payload": {"memory": "on"}, "allocation": 0.5}]
    return {
        "experiment_id": experiment_id, "org_id": org_id, "task_type": task, "kind": "memory_mode",
        "hypothesis": f"Recalled verified experience raises the {task} score (same task, model and budget).",
        "arms": json.dumps(arms, separators=(",", ":")), "control_arm": "recall_off", "primary_metric": "score",
        "direction": "increase", "mde": 0.05, "alpha": 0.05, "power": 0.8, "baseline_mean": design.baseline,
        "baseline_sd": float(np.hypot(design.score_sd, design.user_sd)), "min_samples_per_arm": design.min_samples_per_arm,
        "randomization_unit": "session", "sessions_per_unit": "many", "guardrails": "[]",
        "metric_caps": json.dumps({"time_minutes": 240.0, "tokens": 200000.0}, separators=(",", ":")),
        "expected_verified_share": 1.0, "registered_at": t0,
    }


def simulate_memory_runs(
    landing_dir: str | os.PathLike[str],
    *,
    seed: int = 20261130,
    org_id: str = "fabrikam",
    tasks: Mapping[str, float] | None = None,
    runs_per_arm: int = 120,
    start: str = "2026-09-01",
    design: RunDesign | None = None,
) -> MemoryRuns:
    """Write memory-on/off runs for ``tasks`` (task type -> true gain; default :data:`DEFAULT_TASKS`).

    ``runs_per_arm`` sessions per arm and task from ``start``, drawn as ``design`` says
    (default :class:`RunDesign`). Files are ``<landing>/<table>/<day>/memory-runs-<org>-<seed>.jsonl``.
    """
    tasks = dict(DEFAULT_TASKS if tasks is None else tasks)
    design = design or RunDesign()
    rng = np.random.default_rng(seed)
    t0 = _dt.datetime.fromisoformat(start).replace(tzinfo=UTC)
    experiments, events = [], []
    tables: dict[str, list[dict]] = {"sessions": [], "assignments": [], "outcomes": []}
    ids = {}
    for task, gain in tasks.items():
        experiment_id = ids[task] = f"{org_id}-{task}-memory"
        experiments.append(_registration(experiment_id, org_id, task, t0, design))
        events.append({"experiment_id": experiment_id, "status": "active", "at": t0, "reason": "registered"})
        for table, found in _rows(rng, experiment_id, org_id, task, gain, t0, runs_per_arm, design).items():
            tables[table].extend(found)
    name = f"memory-runs-{org_id}-{seed}"
    frames = {
        "experiments": (pl.DataFrame(experiments), "registered_at", ["arms", "guardrails", "metric_caps"]),
        "experiment_events": (pl.DataFrame(events), "at", []),
        "sessions": (pl.DataFrame(tables["sessions"], schema_overrides={"admission_id": pl.String}), "started_at", []),
        "assignments": (pl.DataFrame(tables["assignments"]), "assigned_at", []),
        "outcomes": (pl.DataFrame(tables["outcomes"]), "recorded_at", []),
    }
    files, records = [], {}
    for table, (frame, time_column, json_columns) in frames.items():
        written = write_landing(frame, landing_dir, table, time_column=time_column, name=name, json_columns=json_columns)
        files.extend(written.files)
        records[table] = written.rows
    return MemoryRuns(org_id=org_id, true_gains=tasks, experiment_ids=ids, runs_per_arm=runs_per_arm,
                      records_written=records, files_written=sorted(files))
