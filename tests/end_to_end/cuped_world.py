"""A family whose users come back: landing files of a CUPED experiment and the truth behind its look.

Organization ``o``, task type ``t``; experiment ``cx`` (session-randomized, success, MDE 0.1 at
baseline 0.5) registered on 2026-10-15, asking for CUPED by default. Sixty returning users
r0-r59, half of them good at the task (r0-r29):

* 2026-08-25 and 2026-09-20: one verified session each (the plan's history: the September
  sessions are its units, the August ones their covariates);
* 2026-10-10 and 2026-10-20: one verified session each, in the 28 days before the experiment's
  first assignment: each unit's covariate is its user's mean success over them. The outcome of
  r25's session of 10-20 is in a file of its own (:data:`LATE_OUTCOME`), which a test can land late;
* 2026-10-29 to 2026-11-06: the experiment, one session of each returning user and of forty new
  ones (n0-n39, no covariate), the first at 10-29 10:00; even positions in control, odd in
  treatment.

Successes follow the user's group, so the covariate predicts the outcome (:func:`success`).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from tests.end_to_end.landing_files import land_jsonl
from tests.ingest.valid_records import VALID

EXPERIMENT = "cx"
FIRST_DAY = dt.date(2026, 10, 29)
NIGHTS = 9
LATE_OUTCOME = ("outcomes", "2026-10-20", "late.jsonl")
"""Where the late pre-window outcome lands: r25's session of 10-20 (a failure: r25's covariate is
then 0.5, and 1 while it is missing)."""


def good(user: int) -> bool:
    return user < 30


def history_success(user: int, day: str) -> bool:
    """A returning user's outcome before the experiment: the good ones succeed, except some on 10-20."""
    if day == "2026-10-20":
        return user < 20 or user >= 50
    return good(user)


def success(position: int, treated: bool) -> bool:
    """The outcome of the experiment's unit at ``position`` (0-59 returning users, 60-99 new)."""
    if position < 60 and good(position):
        return position % (11 if treated else 7) != 0
    if position < 60:
        return position % (3 if treated else 4) == 0
    return (position - 60) % 3 != 0 if treated else (position - 60) % 2 == 0


def _session(sid: str, user: str, at: dt.datetime, experiment: str | None = None, arm: str | None = None) -> dict:
    return {**VALID["sessions"], "session_id": sid, "org_id": "o", "task_type": "t", "user_id": user,
            "experiment_id": experiment, "delivered_arm": arm, "started_at": at.isoformat(),
            "ended_at": (at + dt.timedelta(minutes=5)).isoformat()}


def _outcome(sid: str, ok: bool, at: dt.datetime) -> dict:
    return {**VALID["outcomes"], "session_id": sid, "success": ok, "recorded_at": (at + dt.timedelta(minutes=30)).isoformat()}


def units() -> list[dict]:
    """The experiment's units: ``position, user, arm, day, success, x, h`` (x, h: the covariate and
    whether the user has one, from the October sessions)."""
    out = []
    for position in range(100):
        user = f"r{position}" if position < 60 else f"n{position - 60}"
        treated = position % 2 == 1
        history = [history_success(position, d) for d in ("2026-10-10", "2026-10-20")] if position < 60 else []
        out.append({"position": position, "user": user, "arm": "treatment" if treated else "control",
                    "day": FIRST_DAY + dt.timedelta(days=position % NIGHTS), "success": success(position, treated),
                    "x": sum(history) / len(history) if history else 0.0, "h": 1.0 if history else 0.0})
    return out


def land(landing: Path, late: bool = True, until: dt.date = FIRST_DAY + dt.timedelta(days=NIGHTS - 1)) -> None:
    """Every file of the world dated up to ``until`` (with ``late``, the late outcome's file too)."""
    registration = {**VALID["experiments"], "experiment_id": EXPERIMENT, "org_id": "o", "task_type": "t",
                    "guardrails": [], "metric_caps": {}, "mde": 0.1, "baseline_mean": 0.5, "min_samples_per_arm": 10,
                    "expected_verified_share": 1.0, "registered_at": "2026-10-15T00:00:00+00:00",
                    "arms": [{"name": "control", "payload": {}, "allocation": 0.5},
                             {"name": "treatment", "payload": {"docs": ["d"]}, "allocation": 0.5}],
                    "control_arm": "control"}
    land_jsonl(landing, "experiments", "2026-10-15", "reg.jsonl", [registration])
    for day in ("2026-08-25", "2026-09-20", "2026-10-10", "2026-10-20"):
        at = dt.datetime.fromisoformat(f"{day}T09:00:00+00:00")
        sessions = [_session(f"{day}-r{u}", f"r{u}", at) for u in range(60)]
        outcomes = [_outcome(f"{day}-r{u}", history_success(u, day), at) for u in range(60)]
        land_jsonl(landing, "sessions", day, "part.jsonl", sessions)
        land_jsonl(landing, "outcomes", day, "part.jsonl", [o for o in outcomes if o["session_id"] != "2026-10-20-r25"])
        if day == LATE_OUTCOME[1] and late:
            land_jsonl(landing, *LATE_OUTCOME, [o for o in outcomes if o["session_id"] == "2026-10-20-r25"])
    by_day: dict[dt.date, list[dict]] = {}
    for unit in units():
        by_day.setdefault(unit["day"], []).append(unit)
    for day, todays in sorted(by_day.items()):
        if day > until:
            continue
        sessions, assignments, outcomes = [], [], []
        for k, unit in enumerate(todays):
            at = dt.datetime.combine(day, dt.time(10, k), tzinfo=dt.timezone.utc)
            sid = f"x-{unit['position']}"
            sessions.append(_session(sid, unit["user"], at, EXPERIMENT, unit["arm"]))
            assignments.append({**VALID["assignments"], "session_id": sid, "experiment_id": EXPERIMENT,
                                "arm": unit["arm"], "unit_id": unit["user"], "assigned_at": at.isoformat()})
            outcomes.append(_outcome(sid, unit["success"], at))
        for table, rows in (("sessions", sessions), ("assignments", assignments), ("outcomes", outcomes)):
            land_jsonl(landing, table, day.isoformat(), "part.jsonl", rows)
