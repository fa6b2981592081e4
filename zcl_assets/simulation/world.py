"""A simulated world with known truth, for ``zcl simulate`` and the end-to-end decision tests.

:func:`simulate_world` writes landing files (JSON Lines, docs/landing.md) for experiments,
experiment_events, sessions, assignments and outcomes, and returns the truth behind them
(also written as JSON beside the landing folder). Deterministic for a seed (NumPy
``default_rng``); generation is vectorised over sessions.

The default world (:func:`default_world`): three organizations of different sizes with
returning users (Zipf activity, a per-user random effect on ``score``), traffic from two
weeks before the experiments register (so a registration can report days to its plan),
and fifteen experiments covering what the decision rule must get right:

* session- and user-randomized designs, two to three arms, unequal allocations and a
  control arm not named ``control``, registered verified shares below 1;
* true effects that are beneficial, harmful and zero;
* a guardrail that the treatment harms (``adopt`` must be held, naming it);
* an SRM incident (a logging bug loses 12% of one arm's assignments) and a drift incident
  (the control's context changes mid-experiment): both must be ``invalid``;
* a declared allocation change (90/10, then 50/50 from day 14) under a rising baseline,
  where only the stratified estimate is right;
* a small organization whose experiments cannot reach their plans (``continue``, never
  ``reject``);
* a fifth concurrent registration in a family of K = 4 slots (refused, ``invalid``);
* self-reported and heuristic outcomes that are optimistic (kept, never used), and dirty
  rows that the contracts quarantine.

Estimands. A session-randomized metric's truth is the difference of the arms' means per
session. A user-randomized metric's primary estimand is the **per-user mean**: the mean
over users of each user's mean outcome, every user weighing the same; its truth is the
average per-user effect over the users expected to take part by the end, weighted by their
probability of taking part. The session-weighted ratio of sums is given beside it (the
average effect weighted by expected sessions). In ``acme-refactor-memory`` heavy users gain
less, so the two differ.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.importers.landing_writer import write_landing

UTC = dt.timezone.utc
EVALUATORS = (  # kind, id, version, share
    ("evaluator", "unit-tests", "2.1", 0.80),
    ("human", "reviewer", "1.0", 0.10),
    ("self_report", "agent-self-report", "1", 0.06),
    ("heuristic", "log-heuristic", "0.3", 0.04),
)
OPTIMISM = 0.25  # self reports and heuristics call success this much more often
SCORE_NOISE_SD = 0.20
USER_EFFECT_SD = 0.15
GAMMA_SHAPE = 6.25  # time and tokens: coefficient of variation 0.4


@dataclass(frozen=True)
class Guardrail:
    metric: str
    direction: str
    margin: float


@dataclass(frozen=True)
class ExperimentSpec:
    """One simulated experiment: its registration and its truth.

    ``effects`` are true differences (treatment - control) of the primary metric per
    treatment arm, in the metric's units; for a user-randomized experiment, ``heavy_effects``
    (if given) replaces them for the most active fifth of users. ``expected`` lists the
    decisions the truth warrants by the planned sample (any of them is right).
    """

    experiment_id: str
    org_id: str
    task_type: str
    primary_metric: str
    arms: tuple[str, ...]
    shares: tuple[float, ...]
    baseline: float
    effects: dict[str, float]
    mde: float
    expected: tuple[str, ...]
    label: str
    direction: str = "increase"
    control_arm: str = "control"
    randomization_unit: str = "session"
    kind: str = "inclusion"
    min_samples: int = 200
    expected_verified_share: float = 0.85
    guardrails: tuple[Guardrail, ...] = ()
    guardrail_effects: dict[str, dict[str, float]] = field(default_factory=dict)
    heavy_effects: dict[str, float] | None = None
    registered_day: int = 0
    incident: str | None = None  # "srm" | "drift"
    incident_day: int = 20
    allocation_change: tuple[int, tuple[float, ...]] | None = None
    trend_per_day: float = 0.0


@dataclass(frozen=True)
class OrgSpec:
    org_id: str
    users: int
    tasks: dict[str, float]  # task type -> sessions a day


@dataclass(frozen=True)
class WorldConfig:
    """The world: organizations, experiments, length and noise. See :func:`default_world`."""

    orgs: tuple[OrgSpec, ...]
    experiments: tuple[ExperimentSpec, ...]
    start: str = "2026-10-01"
    days: int = 56
    history_days: int = 14
    outside_share: float = 0.10
    outcome_share: float = 0.97
    traffic_scale: float = 1.0
    dirty: bool = True


def default_world(start: str = "2026-10-01", days: int = 56, traffic_scale: float = 1.0) -> WorldConfig:
    """The world described in the module docstring."""
    tokens_harm = Guardrail("tokens", "decrease", 2000.0)
    orgs = (
        OrgSpec("acme", 3000, {"bugfix": 520.0, "refactor": 330.0, "support": 300.0}),
        OrgSpec("globex", 900, {"bugfix": 170.0, "analysis": 110.0}),
        OrgSpec("tinyco", 60, {"docs": 10.0, "bugfix": 12.0}),
    )
    s = ExperimentSpec
    experiments = (
        s("acme-bugfix-runbook", "acme", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.12}, 0.08, ("adopt",), "beneficial"),
        s("acme-bugfix-order", "acme", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.45,
          {"treatment": 0.0}, 0.08, ("no_effect", "inconclusive"), "null", kind="order"),
        s("acme-bugfix-legacy", "acme", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.55,
          {"treatment": -0.12}, 0.08, ("reject",), "harmful"),
        s("acme-bugfix-srm", "acme", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.0}, 0.08, ("invalid",), "SRM incident: 12% of treatment assignments lost", incident="srm",
          incident_day=0),
        s("acme-bugfix-fifth", "acme", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.10}, 0.08, ("invalid",), "registered while K = 4 experiments of the family are live",
          registered_day=3),
        s("acme-refactor-memory", "acme", "refactor", "score", ("control", "memory_on"), (0.5, 0.5), 0.60,
          {"memory_on": 0.10}, 0.05, ("adopt",), "user-randomized, heavy users gain less",
          randomization_unit="user", kind="memory_mode", heavy_effects={"memory_on": 0.04}),
        s("acme-refactor-time", "acme", "refactor", "time_minutes", ("control", "treatment"), (0.5, 0.5), 40.0,
          {"treatment": -6.0}, 4.0, ("continue",), "beneficial, but it costs tokens beyond the guardrail",
          direction="decrease", guardrails=(tokens_harm,),
          guardrail_effects={"tokens": {"treatment": 5000.0}}),
        s("acme-refactor-drift", "acme", "refactor", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.0}, 0.08, ("invalid",), "drift incident: the control's context changes on day 20",
          incident="drift", incident_day=20),
        s("acme-support-three", "acme", "support", "success", ("baseline", "faq_first", "policy_first"),
          (0.5, 0.25, 0.25), 0.40, {"faq_first": 0.12, "policy_first": 0.0}, 0.09, ("adopt",),
          "three arms 50/25/25, control named baseline; faq_first beneficial, policy_first null",
          control_arm="baseline", kind="order"),
        s("acme-support-shift", "acme", "support", "success", ("control", "treatment"), (0.9, 0.1), 0.35,
          {"treatment": 0.0}, 0.08, ("no_effect", "inconclusive", "continue"),
          "allocation declared 90/10 then 50/50 from day 14 while the baseline rises; no effect",
          allocation_change=(14, (0.5, 0.5)), trend_per_day=0.004),
        s("globex-bugfix-include", "globex", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.14}, 0.10, ("adopt",), "beneficial, registered verified share 0.85"),
        s("globex-bugfix-users", "globex", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.0}, 0.10, ("no_effect", "inconclusive", "continue"),
          "user-randomized binary metric (per-user mean), no effect", randomization_unit="user"),
        s("globex-analysis-tokens", "globex", "analysis", "tokens", ("control", "treatment"), (0.5, 0.5), 15000.0,
          {"treatment": 2500.0}, 1500.0, ("reject",), "harmful: more tokens (a decrease is good)",
          direction="decrease"),
        s("tinyco-docs-include", "tinyco", "docs", "success", ("control", "treatment"), (0.5, 0.5), 0.60,
          {"treatment": 0.0}, 0.08, ("continue",), "small organization: underpowered, no effect"),
        s("tinyco-bugfix-include", "tinyco", "bugfix", "success", ("control", "treatment"), (0.5, 0.5), 0.50,
          {"treatment": 0.05}, 0.08, ("continue",), "small organization: underpowered, small benefit"),
    )
    return WorldConfig(orgs=orgs, experiments=experiments, start=start, days=days, traffic_scale=traffic_scale)


@dataclass(frozen=True)
class WorldTruth:
    """What :func:`simulate_world` wrote and the truth behind it."""

    seed: int
    config: WorldConfig
    files_written: list[Path]
    records_written: dict[str, int]
    truth: dict[str, dict]
    """experiment id -> label, estimand, true effects (and the session-weighted ones for a
    user-randomized experiment), guardrail effects, incident, expected decisions"""
    truth_path: Path | None
    dirty_rows: dict[str, int]


def _ts(seconds: np.ndarray) -> pl.Series:
    return pl.Series(np.asarray(seconds * 1_000_000, dtype=np.int64)).cast(pl.Datetime("us", "UTC"))


def _digest(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


class _Sessions(NamedTuple):
    """Every session of the world, in start order, as arrays."""

    frame: pl.DataFrame  # org_id, task_type, day, t, user
    day: np.ndarray
    user: np.ndarray
    org: np.ndarray
    task: np.ndarray


def _users(rng: np.random.Generator, config: WorldConfig) -> dict[str, dict]:
    """Per organization: Zipf activity, a random effect on score, the top fifth is heavy."""
    users = {}
    for org in config.orgs:
        w = 1.0 / np.arange(1, org.users + 1) ** 0.9
        w = w / w.sum()
        users[org.org_id] = dict(ids=np.array([f"{org.org_id}-user-{k:05d}" for k in range(org.users)]), w=w,
                                 effect=rng.normal(0.0, USER_EFFECT_SD, org.users),
                                 heavy=np.arange(org.users) < max(1, org.users // 5))
    return users


def _sessions(rng: np.random.Generator, config: WorldConfig, users: dict[str, dict], t0: float) -> _Sessions:
    """Poisson sessions a day per organization and task type, from the history's first day on."""
    frames = []
    first_day = -config.history_days
    for org in config.orgs:
        u = users[org.org_id]
        for task, rate in org.tasks.items():
            counts = rng.poisson(rate * config.traffic_scale, config.days - first_day)
            day = np.repeat(np.arange(first_day, config.days), counts)
            t = t0 + day * 86400.0 + np.floor(rng.uniform(60.0, 86340.0, day.size))
            who = rng.choice(len(u["w"]), size=day.size, p=u["w"])
            frames.append(pl.DataFrame({"org_id": org.org_id, "task_type": task, "day": day, "t": t, "user": who}))
    frame = pl.concat(frames).sort("t", "org_id", "task_type", "user")
    return _Sessions(frame, frame["day"].to_numpy(), frame["user"].to_numpy(), frame["org_id"].to_numpy(),
                     frame["task_type"].to_numpy())


def _user_arms(seed: int, e: ExperimentSpec, n_users: int) -> np.ndarray:
    """Each user's arm of a user-randomized experiment: its own coin, seeded by the world and the experiment."""
    key = np.frombuffer(hashlib.sha256(f"{seed}|{e.experiment_id}".encode()).digest()[:8], dtype=np.uint64)[0]
    user_coin = np.random.default_rng(int(key) % (2**32)).random(n_users)
    shares = np.asarray(e.shares)
    return np.searchsorted(np.cumsum(shares), user_coin, side="right").clip(0, len(shares) - 1)


def _assign(rng: np.random.Generator, config: WorldConfig, users: dict[str, dict], s: _Sessions,
            seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each session's experiment (one of its family's live ones, or none) and arm (None outside)."""
    n = s.day.size
    pick = rng.random(n)
    outside = rng.random(n) < config.outside_share
    coin = rng.random(n)
    experiment = np.full(n, None, dtype=object)
    arm = np.full(n, None, dtype=object)
    by_family: dict[tuple[str, str], list[ExperimentSpec]] = {}
    for e in config.experiments:
        by_family.setdefault((e.org_id, e.task_type), []).append(e)
    for (org, task), exps in by_family.items():
        in_family = (s.org == org) & (s.task == task) & ~outside
        live = np.stack([s.day >= e.registered_day for e in exps], axis=1)  # (n, experiments)
        n_live = live.sum(axis=1)
        slot = np.minimum((pick * np.maximum(n_live, 1)).astype(int), np.maximum(n_live - 1, 0))
        order = np.cumsum(live, axis=1) - 1  # index among live experiments
        for j, e in enumerate(exps):
            chosen = in_family & live[:, j] & (order[:, j] == slot) & (n_live > 0)
            experiment[chosen] = e.experiment_id
            if e.randomization_unit == "user":
                arm[chosen] = np.asarray(e.arms, dtype=object)[_user_arms(seed, e, len(users[org]["w"]))[s.user[chosen]]]
                continue
            share_now = np.broadcast_to(np.asarray(e.shares), (n, len(e.shares))).copy()
            if e.allocation_change is not None:
                change_day, new = e.allocation_change
                share_now[s.day >= change_day] = np.asarray(new)
            idx = (coin[:, None] > np.cumsum(share_now, axis=1)).sum(axis=1).clip(0, len(e.shares) - 1)
            arm[chosen] = np.asarray(e.arms, dtype=object)[idx[chosen]]
    return experiment, arm


def _true_means(config: WorldConfig, users: dict[str, dict], s: _Sessions, experiment: np.ndarray,
                arm: np.ndarray) -> dict[str, np.ndarray]:
    """The true mean of every metric at every session: the defaults, each experiment's arms and guardrails."""
    n = s.day.size
    target = {"success": np.full(n, 0.6), "time_minutes": np.full(n, 25.0), "tokens": np.full(n, 15000.0),
              "score": np.full(n, 0.6)}
    for e in config.experiments:
        sel = experiment == e.experiment_id
        if not sel.any():
            continue
        base = e.baseline + e.trend_per_day * np.maximum(s.day[sel], 0)
        eff = np.zeros(sel.sum())
        for a, val in e.effects.items():
            here = arm[sel] == a
            eff[here] = val
            if e.heavy_effects is not None and a in e.heavy_effects:
                heavy = users[e.org_id]["heavy"][s.user[sel]]
                eff[here & heavy] = e.heavy_effects[a]
        target[e.primary_metric][sel] = base + eff
        for metric, per_arm in e.guardrail_effects.items():
            g = target[metric]
            for a, val in per_arm.items():
                where = np.flatnonzero(sel)[arm[sel] == a]
                g[where] = g[where] + val
    return target


class _Draws(NamedTuple):
    """The measured outcome of every session, its evaluator and its times."""

    score: np.ndarray
    minutes: np.ndarray
    tokens: np.ndarray
    evaluator: np.ndarray
    success: np.ndarray
    has_outcome: np.ndarray
    end: np.ndarray
    recorded: np.ndarray
    assigned_at: np.ndarray


def _outcomes(rng: np.random.Generator, config: WorldConfig, users: dict[str, dict], s: _Sessions,
              means: dict[str, np.ndarray]) -> _Draws:
    n = s.day.size
    user_effect = np.zeros(n)
    for org in config.orgs:
        sel = s.org == org.org_id
        user_effect[sel] = users[org.org_id]["effect"][s.user[sel]]
    score = np.round(means["score"] + user_effect + rng.normal(0.0, SCORE_NOISE_SD, n), 4)
    minutes = np.round(rng.standard_gamma(GAMMA_SHAPE, n) * means["time_minutes"] / GAMMA_SHAPE, 2)
    tokens = np.round(rng.standard_gamma(GAMMA_SHAPE, n) * means["tokens"] / GAMMA_SHAPE)
    cum = np.cumsum([e[3] for e in EVALUATORS])
    ev = np.minimum(np.searchsorted(cum, rng.random(n) * cum[-1], side="right"), len(EVALUATORS) - 1)
    optimistic = np.isin(ev, [2, 3])
    p = np.clip(means["success"] + np.where(optimistic, OPTIMISM, 0.0), 0.02, 0.98)
    success = rng.random(n) < p
    has_outcome = rng.random(n) < config.outcome_share
    t = s.frame["t"].to_numpy()
    end = t + np.round(minutes * 60)
    recorded = end + rng.integers(5, 301, n)
    return _Draws(score, minutes, tokens, ev, success, has_outcome, end, recorded, t - rng.integers(1, 6, n))


def _incidents(rng: np.random.Generator, config: WorldConfig, s: _Sessions, experiment: np.ndarray,
               arm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Context digests per experiment and arm (the drift incident changes the control's), and
    the assignment rows the SRM incident loses (a logging bug drops 12% of one arm's)."""
    n = s.day.size
    digest = np.full(n, _digest("outside"), dtype=object)
    for e in config.experiments:
        sel = experiment == e.experiment_id
        for a in e.arms:
            here = sel & (arm == a)
            digest[here] = _digest(e.experiment_id, a)
            if e.incident == "drift" and a == e.control_arm:
                digest[here & (s.day >= e.incident_day)] = _digest(e.experiment_id, a, "relearned")
    lost = np.zeros(n, dtype=bool)
    for e in config.experiments:
        if e.incident == "srm":
            treated = (experiment == e.experiment_id) & (arm != e.control_arm) & (s.day >= e.incident_day)
            lost |= treated & (rng.random(n) < 0.12)
    return digest, lost


def _frames(config: WorldConfig, users: dict[str, dict], s: _Sessions, experiment: np.ndarray, arm: np.ndarray,
            draws: _Draws, digest: np.ndarray, lost: np.ndarray) -> dict[str, pl.DataFrame]:
    """The sessions, assignments and outcomes tables."""
    n = s.day.size
    sids = np.array([f"ses-{i:07d}" for i in range(1, n + 1)], dtype=object)
    user_ids = np.empty(n, dtype=object)
    for org in config.orgs:
        sel = s.org == org.org_id
        user_ids[sel] = users[org.org_id]["ids"][s.user[sel]]
    in_exp = experiment != None  # noqa: E711 (object array)
    unit_ids = np.where(in_exp & np.isin(experiment, [e.experiment_id for e in config.experiments
                                                       if e.randomization_unit == "user"]), user_ids, sids)
    sessions = pl.DataFrame({
        "session_id": sids.tolist(), "org_id": s.org.tolist(), "user_id": user_ids.tolist(), "task_type": s.task.tolist(),
        "model": np.asarray(["model-a", "model-b"])[s.user % 2], "budget": np.full(n, 50000.0),
    }).with_columns(
        _ts(s.frame["t"].to_numpy()).alias("started_at"), _ts(draws.end).alias("ended_at"),
        pl.Series("context_digest", digest.tolist(), dtype=pl.String),
        pl.Series("experiment_id", experiment.tolist(), dtype=pl.String),
        pl.Series("delivered_arm", arm.tolist(), dtype=pl.String),
    )
    keep = in_exp & ~lost
    assignments = pl.DataFrame({
        "session_id": sids[keep].tolist(), "experiment_id": experiment[keep].astype(str), "arm": arm[keep].astype(str),
        "unit_id": unit_ids[keep].tolist(),
    }).with_columns(_ts(draws.assigned_at[keep]).alias("assigned_at"))
    ev, has = draws.evaluator, draws.has_outcome
    kinds, ids, versions = (np.asarray([e[k] for e in EVALUATORS], dtype=object)[ev] for k in range(3))
    outcomes = pl.DataFrame({
        "session_id": sids[has].tolist(), "success": draws.success[has], "time_minutes": draws.minutes[has],
        "tokens": draws.tokens[has], "score": draws.score[has], "evaluator_id": ids[has].tolist(),
        "evaluator_version": versions[has].tolist(), "evaluator_kind": kinds[has].tolist(),
    }).with_columns(_ts(draws.recorded[has]).alias("recorded_at"))
    return {"sessions": sessions, "assignments": assignments, "outcomes": outcomes}


def simulate_world(
    landing_dir: str | os.PathLike[str],
    *,
    seed: int = 20261201,
    config: WorldConfig | None = None,
    truth_path: str | os.PathLike[str] | None = "default",
) -> WorldTruth:
    """Write the landing files of ``config`` (default: :func:`default_world`) and its truth.

    Args:
        landing_dir: Landing folder (``<table>/<YYYY-MM-DD>/world-<seed>.jsonl``).
        seed: NumPy seed; the same seed and config give byte-identical files.
        config: The world.
        truth_path: Where the truth JSON goes: ``"default"`` puts
            ``world-<seed>-truth.json`` beside the landing folder (in its parent), None
            writes none.

    Returns:
        :class:`WorldTruth`.
    """
    config = config or default_world()
    rng = np.random.default_rng(seed)
    landing = Path(landing_dir)
    t0 = dt.datetime.fromisoformat(config.start).replace(tzinfo=UTC).timestamp()
    name = f"world-{seed}"
    users = _users(rng, config)
    s = _sessions(rng, config, users, t0)
    experiment, arm = _assign(rng, config, users, s, seed)
    draws = _outcomes(rng, config, users, s, _true_means(config, users, s, experiment, arm))
    digest, lost = _incidents(rng, config, s, experiment, arm)
    frames = _frames(config, users, s, experiment, arm, draws, digest, lost)
    registrations, events = _registrations(config, t0)
    dirty, extra = _dirty_rows(config, frames["sessions"], frames["assignments"], t0) if config.dirty else ({}, {})
    tables = {
        "experiments": (registrations, "registered_at", ["arms", "guardrails", "metric_caps"]),
        "experiment_events": (events, "at", ["allocation"]),
        "sessions": (frames["sessions"], "started_at", []),
        "assignments": (frames["assignments"], "assigned_at", []),
        "outcomes": (frames["outcomes"], "recorded_at", []),
    }
    files: list[Path] = []
    records: dict[str, int] = {}
    for table, (df, time_col, json_cols) in tables.items():
        lines = {d: v for (tb, d), v in extra.items() if tb == table}
        written = write_landing(df, landing, table, time_column=time_col, name=name, json_columns=json_cols,
                                extra_lines=lines, fallback_day=config.start)
        files.extend(written.files)
        records[table] = written.rows + sum(len(v) for v in lines.values())
    truth = _truth(config, users, experiment, arm, s.user, s.day)
    path = None
    if truth_path is not None:
        path = landing.parent / f"{name}-truth.json" if truth_path == "default" else Path(truth_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"seed": seed, "config": _config_json(config), "experiments": truth,
                                    "dirty_rows": dirty}, indent=2, sort_keys=True), encoding="utf-8")
    return WorldTruth(seed=seed, config=config, files_written=sorted(files), records_written=records, truth=truth,
                      truth_path=path, dirty_rows=dirty)


def _registrations(config: WorldConfig, t0: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, events = [], []
    for e in config.experiments:
        at = t0 + e.registered_day * 86400.0
        if e.primary_metric == "success":
            sd = None
        elif e.primary_metric == "score":
            sd = float(np.sqrt(SCORE_NOISE_SD**2 + USER_EFFECT_SD**2))  # per session: an upper bound per user
        else:
            sd = float(e.baseline / np.sqrt(GAMMA_SHAPE))
        rows.append({
            "experiment_id": e.experiment_id, "org_id": e.org_id, "task_type": e.task_type, "kind": e.kind,
            "hypothesis": e.label,
            "arms": json.dumps([{"name": a, "payload": {"variant": a}, "allocation": s} for a, s in zip(e.arms, e.shares)]),
            "control_arm": e.control_arm, "primary_metric": e.primary_metric, "direction": e.direction,
            "mde": float(e.mde), "alpha": 0.05, "power": 0.8, "baseline_mean": float(e.baseline), "baseline_sd": sd,
            "min_samples_per_arm": e.min_samples, "randomization_unit": e.randomization_unit,
            "sessions_per_unit": "many",
            "guardrails": json.dumps([asdict(g) for g in e.guardrails]),
            "metric_caps": json.dumps({"time_minutes": 240.0, "tokens": 200000.0}),
            "expected_verified_share": e.expected_verified_share,
            "registered_at": at,
        })
        events.append({"experiment_id": e.experiment_id, "status": "active", "at": at, "reason": "registered",
                       "allocation": None})
        if e.allocation_change is not None:
            change_day, shares = e.allocation_change
            events.append({"experiment_id": e.experiment_id, "status": "active", "at": t0 + change_day * 86400.0,
                           "reason": "allocation changed, declared",
                           "allocation": json.dumps(dict(zip(e.arms, shares)))})
    reg = pl.DataFrame(rows, schema_overrides={"baseline_sd": pl.Float64}).with_columns(
        _ts(np.asarray([r["registered_at"] for r in rows])).alias("registered_at"))
    ev = pl.DataFrame(events, schema_overrides={"allocation": pl.String}).with_columns(
        _ts(np.asarray([r["at"] for r in events])).alias("at"))
    return reg, ev


def _dirty_rows(config: WorldConfig, sessions: pl.DataFrame, assignments: pl.DataFrame, t0: float):
    """Extra raw lines the contracts must quarantine, counted by kind."""
    day = (dt.datetime.fromtimestamp(t0, UTC).date() + dt.timedelta(days=10)).isoformat()
    first = assignments.row(0, named=True)
    dup = dict(first, assigned_at=first["assigned_at"].isoformat(), arm="not-an-arm")
    extra = {
        ("sessions", day): ['{"schema_version":1,"session_id":"ses-broken","org_id":"acme","user_id":'],
        ("outcomes", day): [json.dumps({"schema_version": 1, "success": True, "recorded_at": f"{day}T12:00:00+00:00",
                                        "evaluator_id": "unit-tests", "evaluator_version": "2.1",
                                        "evaluator_kind": "evaluator"})],
        ("assignments", first["assigned_at"].date().isoformat()): [json.dumps({"schema_version": 1, **dup})],
    }
    counts = {"malformed_json": 1, "missing_required_field": 1, "unknown_arm": 1}
    return counts, extra


def _truth(config, users, experiment, arm, user_idx, day) -> dict[str, dict]:
    out = {}
    for e in config.experiments:
        sel = experiment == e.experiment_id
        entry = {
            "label": e.label, "org_id": e.org_id, "task_type": e.task_type, "primary_metric": e.primary_metric,
            "direction": e.direction, "randomization_unit": e.randomization_unit, "control_arm": e.control_arm,
            "arms": list(e.arms), "shares": list(e.shares), "mde": e.mde, "incident": e.incident,
            "expected_decisions": list(e.expected),
            "guardrail_effects": e.guardrail_effects,
            "sessions": int(sel.sum()),
        }
        if e.randomization_unit == "user":
            entry["estimand"] = "per-user mean (primary); session-weighted ratio of sums beside it"
            w = users[e.org_id]["w"]
            heavy = users[e.org_id]["heavy"]
            # expected sessions of each user in this experiment (users pick sessions by w)
            lam = w * sel.sum()
            p_take_part = 1.0 - np.exp(-lam)
            per_user, weighted = {}, {}
            for a, val in e.effects.items():
                tau = np.where(heavy, (e.heavy_effects or {}).get(a, val), val)
                per_user[a] = float(np.sum(p_take_part * tau) / np.sum(p_take_part))
                weighted[a] = float(np.sum(lam * tau) / np.sum(lam))
            entry["effects"] = per_user
            entry["session_weighted_effects"] = weighted
        else:
            entry["estimand"] = "difference of the arms' means per session"
            entry["effects"] = dict(e.effects)
        if e.allocation_change is not None:
            entry["allocation_change"] = {"day": e.allocation_change[0], "shares": list(e.allocation_change[1])}
            entry["trend_per_day"] = e.trend_per_day
        out[e.experiment_id] = entry
    return out


def _config_json(config: WorldConfig) -> dict:
    return {"start": config.start, "days": config.days, "history_days": config.history_days,
            "outside_share": config.outside_share, "outcome_share": config.outcome_share,
            "traffic_scale": config.traffic_scale,
            "orgs": [asdict(o) for o in config.orgs]}
