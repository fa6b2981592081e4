"""A small hand-made landing world whose every figure is known, for the synthetic end-to-end test.

Everything that the older fixtures keep the same is varied here, each on purpose:

- ``exp-three``: three arms with unequal shares (0.2 / 0.5 / 0.3), registered in the order
  ``variant_b, baseline, variant_a`` and landed in the order ``variant_a, variant_b,
  baseline``; the control arm is ``baseline``; the registered expected verified share is 0.8
  and one session in five has only a self-report (not authoritative), so the verified share
  is 0.8; four verified sessions in seven have three authoritative outcomes (evaluator version
  1, then version 2, which wins, then a version 3 whose score is NaN and which is quarantined),
  the others only versions 2 and 3 (the aggregation reads a session with one staged
  authoritative outcome and a revised one by two paths), and each has a later self-report that
  says the opposite; ``time_minutes`` is null on one outcome in three and ``tokens`` is NaN on
  quarantined rows only; one session in four is judged the day after its assignment. Nulls and
  next-day judgements fall on both kinds of session.
- ``exp-users``: user-randomized, control arm ``incumbent`` registered second; 20 users per arm,
  but treatment users have three sessions each and control users one, so a sample-ratio test
  on sessions would fire (60 against 20) while users are balanced.
- ``exp-drift``: control arm ``current`` (registered second); its context digest changes on
  ``DRIFT_DAY``, so the experiment is invalid from that night on.
- Late data: sessions, assignments and outcomes dated after the look (``LATE_DAY``), all in one
  arm, land before the run; none of it may enter the look of ``AS_OF``. A few ``exp-three``
  sessions are assigned in the evening of ``AS_OF`` and verified the next day: assigned in the
  look, not yet verified in it.

The expected figures are counted here from the records, in Python, never through the
project's SQL.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

AS_OF = "2026-03-20"
LATE_DAY = "2026-03-22"
REGISTERED = "2026-03-01T00:00:00+00:00"

THREE_ARMS = (("variant_b", 0.2), ("baseline", 0.5), ("variant_a", 0.3))  # registration order
THREE_LANDING_ORDER = ("variant_a", "variant_b", "baseline")
THREE_SESSIONS = {"baseline": 52, "variant_a": 29, "variant_b": 19}
THREE_SUCCESS_RATE = {"baseline": 0.4, "variant_a": 0.6, "variant_b": 0.3}
THREE_LATE_SESSIONS = 30  # all variant_b, on LATE_DAY
THREE_EVENING_SESSIONS = 4  # variant_a, assigned late on AS_OF, verified the next day
DRIFT_DAY = "2026-03-08"
DRIFT_SESSIONS = 15  # per arm, one a day from 2026-03-02
USERS_PER_ARM = 20
USER_SESSIONS = {"treatment": 3, "incumbent": 1}


def _registration(experiment_id, task_type, arms, control, unit, **kw) -> dict:
    row = {
        "schema_version": 1, "experiment_id": experiment_id, "org_id": "synth", "task_type": task_type, "kind": "order",
        "hypothesis": "a context change helps", "arms": [{"name": a, "payload": {"arm": a}, "allocation": s} for a, s in arms],
        "control_arm": control, "primary_metric": "success", "direction": "increase", "mde": 0.2, "alpha": 0.05,
        "power": 0.8, "baseline_mean": 0.4, "min_samples_per_arm": 20, "randomization_unit": unit,
        "registered_at": REGISTERED,
    }
    row.update(kw)
    return row


EXPERIMENTS = (
    _registration("exp-three", "triage", THREE_ARMS, "baseline", "session", expected_verified_share=0.8,
                  guardrails=[{"metric": "time_minutes", "direction": "decrease", "margin": 5.0}]),
    _registration("exp-users", "review", (("treatment", 0.5), ("incumbent", 0.5)), "incumbent", "user"),
    _registration("exp-drift", "drift", (("candidate", 0.5), ("current", 0.5)), "current", "session"),
)


OUTCOME_SCHEMA = {
    "schema_version": pl.Int64, "session_id": pl.String, "success": pl.Boolean, "time_minutes": pl.Float64,
    "tokens": pl.Float64, "score": pl.Float64, "recorded_at": pl.String, "evaluator_id": pl.String,
    "evaluator_version": pl.String, "evaluator_kind": pl.String,
}


@dataclass
class World:
    """The landed records by table and day, and the figures a correct look must show."""

    records: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    # per (experiment, arm), as of AS_OF: assigned units, verified units, successes, time values
    assigned: dict[tuple[str, str], int] = field(default_factory=dict)
    sessions: dict[tuple[str, str], int] = field(default_factory=dict)
    verified: dict[tuple[str, str], int] = field(default_factory=dict)
    successes: dict[tuple[str, str], int] = field(default_factory=dict)
    times: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    verified_after_look: dict[tuple[str, str], int] = field(default_factory=dict)
    verified_days: dict[tuple[str, str], list[dt.date]] = field(default_factory=dict)  # exp-three, as of AS_OF
    quarantined_outcomes: int = 0

    def add(self, table: str, day: str, record: dict) -> None:
        self.records.setdefault((table, day), []).append(record)

    def write(self, landing: Path) -> None:
        """Write every table and day under ``landing``: outcomes as Parquet (where NaN is a
        value, not a malformed line), the other tables as JSON Lines."""
        for (table, day), rows in self.records.items():
            folder = landing / table / day
            folder.mkdir(parents=True, exist_ok=True)
            if table == "outcomes":
                pl.DataFrame(rows, schema=OUTCOME_SCHEMA).write_parquet(folder / f"{table}.parquet")
            else:
                (folder / f"{table}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _ts(day: dt.date, minutes: int) -> str:
    return (dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc) + dt.timedelta(minutes=minutes)).isoformat()


def _session(world, day, session_id, user_id, task_type, experiment_id, arm, minute, digest=None) -> None:
    start = _ts(day, minute)
    world.add("sessions", day.isoformat(), {
        "schema_version": 1, "session_id": session_id, "org_id": "synth", "user_id": user_id, "task_type": task_type,
        "budget": None if minute % 2 else 5000.0, "started_at": start, "context_digest": digest or f"digest-{arm}",
        "experiment_id": experiment_id, "delivered_arm": arm,
    })
    world.add("assignments", day.isoformat(), {
        "schema_version": 1, "session_id": session_id, "experiment_id": experiment_id, "arm": arm, "unit_id": user_id,
        "assigned_at": start,
    })


def _outcome(world, day, session_id, minute, success, version, kind="evaluator", time_minutes=None, tokens=None,
             score=None) -> None:
    world.add("outcomes", day.isoformat(), {
        "schema_version": 1, "session_id": session_id, "success": success, "time_minutes": time_minutes,
        "tokens": tokens, "score": score, "recorded_at": _ts(day, minute), "evaluator_id": "judge",
        "evaluator_version": version, "evaluator_kind": kind,
    })


def build_world() -> World:
    """The landed records and the expected figures (see the module docstring)."""
    world = World()
    for registration in EXPERIMENTS:
        world.add("experiments", "2026-03-01", registration)
    # exp-users is completed after the look: its status in the look is still active
    world.add("experiment_events", "2026-03-01", {"schema_version": 1, "experiment_id": "exp-users", "status": "active",
                                                  "at": REGISTERED, "reason": "launched"})
    world.add("experiment_events", LATE_DAY, {"schema_version": 1, "experiment_id": "exp-users", "status": "completed",
                                              "at": f"{LATE_DAY}T12:00:00+00:00", "reason": "done"})
    first_day = dt.date(2026, 3, 2)

    # exp-three: arms landed in another order than registered; day d gets session i % 10 == d
    for arm in THREE_LANDING_ORDER:
        n = THREE_SESSIONS[arm]
        wins = round(THREE_SUCCESS_RATE[arm] * n)
        key = ("exp-three", arm)
        world.assigned[key] = world.sessions[key] = n
        world.verified[key] = world.successes[key] = 0
        world.times[key] = []
        world.verified_days[key] = []
        for i in range(n):
            day = first_day + dt.timedelta(days=i % 10)
            sid = f"three-{arm}-{i:03d}"
            _session(world, day, sid, f"user-{arm}-{i}", "triage", "exp-three", arm, 60 + i)
            success = i < wins  # the first `wins` sessions of the arm succeed
            if i % 5 == 4:  # only a self-report: not verified
                _outcome(world, day, sid, 600 + i, success, "1", kind="self_report", time_minutes=3.0)
                continue
            time_minutes = None if i % 3 == 0 else float(10 + i % 7)
            judged = day + dt.timedelta(days=1 if i % 4 == 1 else 0)  # some sessions are judged the next day
            if i % 7 < 4:  # a revised session: version 1 first, superseded by version 2
                _outcome(world, judged, sid, 300 + i, not success, "1", time_minutes=99.0)
            _outcome(world, judged, sid, 400 + i, success, "2", time_minutes=time_minutes, tokens=None if i % 2 else 800.0)
            # a later authoritative version with a NaN score: quarantined (not_finite), so version 2 stays
            _outcome(world, judged, sid, 500 + i, not success, "3", time_minutes=1.0, tokens=math.nan, score=math.nan)
            world.quarantined_outcomes += 1
            _outcome(world, judged, sid, 700 + i, not success, "1", kind="self_report")  # later, never authoritative
            world.verified_days[key].append(judged)
            world.verified[key] += 1
            world.successes[key] += success
            if time_minutes is not None:
                world.times[key].append(time_minutes)
    evening, next_day = dt.date.fromisoformat(AS_OF), dt.date.fromisoformat(AS_OF) + dt.timedelta(days=1)
    for i in range(THREE_EVENING_SESSIONS):
        sid = f"three-evening-{i}"
        _session(world, evening, sid, f"user-evening-{i}", "triage", "exp-three", "variant_a", 23 * 60 + i)
        _outcome(world, next_day, sid, 60 + i, True, "2", time_minutes=5.0)
    world.assigned[("exp-three", "variant_a")] += THREE_EVENING_SESSIONS
    world.sessions[("exp-three", "variant_a")] += THREE_EVENING_SESSIONS
    world.verified_after_look[("exp-three", "variant_a")] = THREE_EVENING_SESSIONS
    late = dt.date.fromisoformat(LATE_DAY)
    for i in range(THREE_LATE_SESSIONS):
        sid = f"three-late-{i:03d}"
        _session(world, late, sid, f"user-late-{i}", "triage", "exp-three", "variant_b", 60 + i)
        _outcome(world, late, sid, 400 + i, True, "2", time_minutes=50.0)

    # exp-users: 20 users per arm; treatment users come back three times
    for arm, per_user in USER_SESSIONS.items():
        key = ("exp-users", arm)
        world.assigned[key] = world.verified[key] = USERS_PER_ARM
        world.sessions[key] = USERS_PER_ARM * per_user
        world.successes[key] = 0
        for u in range(USERS_PER_ARM):
            user_success = u % 2 == 0 if arm == "treatment" else u % 4 == 0
            world.successes[key] += user_success  # every session of a user has the user's outcome
            for j in range(per_user):
                day = first_day + dt.timedelta(days=(u + j) % 12)
                sid = f"users-{arm}-{u:02d}-{j}"
                _session(world, day, sid, f"person-{arm}-{u:02d}", "review", "exp-users", arm, 60 + 10 * u + j)
                _outcome(world, day, sid, 400 + 10 * u + j, user_success, "1")
    for i in range(10):  # late returns of control users
        sid = f"users-late-{i}"
        _session(world, late, sid, f"person-incumbent-{i:02d}", "review", "exp-users", "incumbent", 60 + i)
        _outcome(world, late, sid, 400 + i, True, "1")

    # exp-drift: the control arm's digest changes on DRIFT_DAY
    drift = dt.date.fromisoformat(DRIFT_DAY)
    for arm in ("candidate", "current"):
        key = ("exp-drift", arm)
        world.assigned[key] = world.sessions[key] = world.verified[key] = DRIFT_SESSIONS
        world.successes[key] = sum(i % 2 == 0 for i in range(DRIFT_SESSIONS))
        for i in range(DRIFT_SESSIONS):
            day = first_day + dt.timedelta(days=i)
            digest = "digest-current-v2" if arm == "current" and day >= drift else None
            sid = f"drift-{arm}-{i:02d}"
            _session(world, day, sid, f"drifter-{arm}-{i}", "drift", "exp-drift", arm, 60 + i, digest=digest)
            _outcome(world, day, sid, 400 + i, i % 2 == 0, "1")
    return world
