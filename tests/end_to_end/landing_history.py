"""Thirty UTC days of landing, night by night, with every kind of change a landing sees.

:func:`build_history` returns a :class:`History`: every version of every landed file with
the night from which it is in the landing folder, and the nights to run. The pipeline must
end, after those nights, with the tables of one fresh load of the final files
(``tests/end_to_end/test_incremental_equals_fresh.py``).

The world (seeded; the same seed gives the same bytes), two organizations, six experiments
(:data:`DESIGNS`), about 1,900 sessions:

* ``fab-three``: three arms with unequal shares (0.5 / 0.3 / 0.2), a time guardrail, and a
  declared allocation change on day 11 that evens the shares (0.34 / 0.33 / 0.33);
* ``fab-reopen``: a continuous primary metric (``time_minutes``, decrease), ``completed`` on
  day 14 and ``reopened`` on day 18, with no traffic in between;
* ``fab-mem`` and ``fab-users``: ``memory_mode`` experiments in two task types on the same
  metric, so Experience Gain pools them; ``fab-mem`` is session-randomized with a large
  effect (it reaches ``adopt``: a knowledge record is written); ``fab-users`` is
  user-randomized, 60 users coming back on many days, registered on day 6;
* ``fab-export``: an aggregate-only export (``arm_snapshots``: cumulative statistics per arm,
  metric and day, two metrics);
* ``con-score`` (organization contoso): a continuous ``score`` metric with a tokens
  guardrail; contoso also has sessions in no experiment and seed note 001's week of
  exploration admissions (``zcl_assets.simulation.admissions``) with the sessions they
  launched (the funnel, loop health).

Outcomes of fabrikam are Parquet, of contoso JSON Lines; one session in twenty has no
outcome at first, one in twenty only a self-report (kept, never authoritative), one in ten of
contoso's is judged by a human; outcomes of late sessions are recorded after midnight, in the
next day's folder. Dirty rows on day 10 (:func:`_dirty_rows`), each refused by its rule: a
malformed JSON line, an unparseable timestamp, a session ending before it started, a changed
second registration, an undeclared arm, a repeated assignment, a delivered-arm mismatch, a
user assigned to both arms, an outcome recorded before its assignment, negative tokens, a NaN
score, an outcome without a session id, one without any metric, and one whose session never
lands.

What happens on the way (a night is named by the UTC day it looks at):

* nights 6 to 8: ``fab-users``' assignments and its ``active`` event land, but its
  registration (dated day 6) lands only on night 9: they are held (``unknown_experiment``)
  and released then;
* night 12: corrected files of earlier days replace the landed ones: contoso's sessions of
  day 4 (a changed value; a removed session, whose outcome is then held back) and outcomes
  (three verdicts flipped, two times changed, a row removed, a row added), and fabrikam's
  outcomes of day 8 (verdicts of ``fab-mem`` flipped: the looks of earlier nights change);
* night 15: late outcomes of sessions of days 5 to 8 that had none, landed in the folder of
  day 15, the day they were recorded;
* night 16: two files of day 9 are removed (sessions and assignments of a third of
  ``fab-three``'s day: their assignments lose their sessions, their outcomes are held), and
  fabrikam's outcomes of day 6 are corrected (``fab-mem`` again: the evidence of a knowledge
  claim already recorded changes);
* night 19: a re-evaluation: a later evaluator version judges again verified sessions of
  days 8 to 11, half of them with the opposite verdict, recorded on day 19;
* day 20: fabrikam's sessions of day 20 land only on night 22, so the outcomes of those
  sessions, landed on night 20, wait for them (held, then staged);
* night 21: nothing newly lands (every file of day 21 lands on night 22).

By default the pipeline runs 9 of the 30 nights (:data:`REDUCED_NIGHTS`; a night lands
everything due since the night before, so the late outcomes land on night 16 and the
re-evaluation on night 20), chosen so that each event above is seen before and after it
happens; ``ZCL_EVERY_NIGHT=1`` runs all 30.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from zcl_assets.simulation.admissions import seed_week_events

START = dt.date(2026, 10, 1)
DAYS = 30
SEED = 20261218
REDUCED_NIGHTS = (3, 7, 9, 12, 16, 20, 21, 22, 30)  # day numbers, 1 = START
LATE_REGISTRATION_DAY, REGISTRATION_LANDS = 6, 9
CORRECTION_NIGHT, CORRECTED_CONTOSO_DAY, CORRECTED_FABRIKAM_DAY = 12, 4, 8
LATE_OUTCOMES_DAY, LATE_OUTCOME_SESSION_DAYS = 15, (5, 6, 7, 8)
REMOVAL_NIGHT, REMOVED_FILES_DAY, SECOND_CORRECTED_DAY = 16, 9, 6
REEVALUATION_DAY, REEVALUATED_DAYS = 19, (8, 9, 10, 11)
HELD_SESSIONS_DAY, HELD_SESSIONS_LAND = 20, 22
QUIET_NIGHT = 21
ALLOCATION_CHANGE_DAY, COMPLETED_DAY, REOPENED_DAY = 11, 14, 18
DIRTY_DAY, ADMISSIONS_FROM = 10, 2
USERS = 60  # fab-users' pool of returning users
NEW_SHARES = {"baseline": 0.34, "order_a": 0.33, "order_b": 0.33}  # fab-three from ALLOCATION_CHANGE_DAY on


def day(n: int) -> str:
    """The UTC day ``n`` of the history (1 = the first) as ``YYYY-MM-DD``."""
    return (START + dt.timedelta(days=n - 1)).isoformat()


def _day_number(moment: dt.datetime) -> int:
    return (moment.astimezone(dt.timezone.utc).date() - START).days + 1


def _midnight(n: int) -> dt.datetime:
    return dt.datetime.combine(START + dt.timedelta(days=n - 1), dt.time(), tzinfo=dt.timezone.utc)


def _ts(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat()


@dataclass(frozen=True)
class Design:
    """One experiment: its registration and how its sessions behave."""

    experiment_id: str
    org_id: str
    task_type: str
    kind: str
    arms: tuple[tuple[str, float], ...]  # (name, share); the first is the control arm
    metric: str
    means: dict[str, float]  # per arm: success rate, mean minutes or mean score
    per_day: int
    unit: str = "session"
    direction: str = "increase"
    first_day: int = 1
    extra: dict = field(default_factory=dict)

    @property
    def file(self) -> str:
        return self.org_id


DESIGNS = (
    Design("fab-three", "fabrikam", "fab-triage", "order", (("baseline", 0.5), ("order_a", 0.3), ("order_b", 0.2)),
           "success", {"baseline": 0.4, "order_a": 0.55, "order_b": 0.3}, 14,
           extra={"guardrails": [{"metric": "time_minutes", "direction": "decrease", "margin": 5.0}]}),
    Design("fab-reopen", "fabrikam", "fab-plan", "other", (("control", 0.5), ("short_prompt", 0.5)), "time_minutes",
           {"control": 30.0, "short_prompt": 26.0}, 8, direction="decrease", extra={"baseline_sd": 12.0}),
    Design("fab-mem", "fabrikam", "fab-write", "memory_mode", (("memory_off", 0.5), ("memory_on", 0.5)), "success",
           {"memory_off": 0.3, "memory_on": 0.85}, 12),
    Design("fab-users", "fabrikam", "fab-review", "memory_mode", (("memory_off", 0.5), ("memory_on", 0.5)), "success",
           {"memory_off": 0.45, "memory_on": 0.6}, 10, unit="user", first_day=LATE_REGISTRATION_DAY),
    Design("con-score", "contoso", "con-support", "inclusion", (("control", 0.5), ("with_faq", 0.5)), "score",
           {"control": 0.6, "with_faq": 0.68}, 10, extra={
               "baseline_sd": 0.2, "guardrails": [{"metric": "tokens", "direction": "decrease", "margin": 1500.0}]}),
)
SNAPSHOT_DESIGN = Design("fab-export", "fabrikam", "fab-export", "other", (("control", 0.5), ("variant", 0.5)),
                         "success", {"control": 0.5, "variant": 0.58}, 0)
LATE_DESIGN = next(d for d in DESIGNS if d.first_day > 1)


@dataclass
class History:
    """Every version of every landed file, and the nights to run.

    ``versions[path]`` lists ``(night, content)`` in night order: from ``night`` (a day
    number) on, the file holds ``content``; ``None`` means the file is removed. Paths are
    ``<table>/<YYYY-MM-DD>/<file>`` under the landing folder.
    """

    versions: dict[str, list[tuple[int, bytes | None]]] = field(default_factory=dict)
    nights: tuple[int, ...] = ()
    facts: dict[str, object] = field(default_factory=dict)  # ids and counts the builders chose, for the test

    def land(self, path: str, content: bytes | None, night: int) -> None:
        self.versions.setdefault(path, []).append((night, content))
        self.versions[path].sort(key=lambda v: v[0])

    def first(self, path: str) -> bytes:
        return self.versions[path][0][1]

    def landing_on(self, night: int) -> dict[str, bytes]:
        """The files in the landing folder on ``night``: {path: content}."""
        out = {}
        for path, versions in self.versions.items():
            current = [content for n, content in versions if n <= night]
            if current and current[-1] is not None:
                out[path] = current[-1]
        return out

    def final(self) -> dict[str, bytes]:
        return self.landing_on(self.nights[-1])


def sync_landing(landing, files: dict[str, bytes]) -> None:
    """Make the folder ``landing`` hold exactly ``files``: write what is new or changed, remove
    the rest (and emptied folders). Unchanged files keep their modification times."""
    wanted = {landing / p: content for p, content in files.items()}
    for path in [p for p in landing.rglob("*") if p.is_file()] if landing.exists() else []:
        if path not in wanted:
            path.unlink()
    for path, content in wanted.items():
        if not path.exists() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    for folder in sorted((p for p in landing.rglob("*") if p.is_dir()), reverse=True) if landing.exists() else []:
        if not any(folder.iterdir()):
            folder.rmdir()


OUTCOME_SCHEMA = {
    "schema_version": pl.Int64, "session_id": pl.String, "success": pl.Boolean, "time_minutes": pl.Float64,
    "tokens": pl.Float64, "score": pl.Float64, "recorded_at": pl.String, "evaluator_id": pl.String,
    "evaluator_version": pl.String, "evaluator_kind": pl.String,
}


def encode(path: str, rows: list) -> bytes:
    """A landed file's bytes: Parquet for ``*.parquet`` (outcomes), else JSON Lines (a str row is a raw line)."""
    if path.endswith(".parquet"):
        out = io.BytesIO()
        pl.DataFrame(rows, schema=OUTCOME_SCHEMA).write_parquet(out)
        return out.getvalue()
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def decode(path: str, content: bytes) -> list[dict]:
    if path.endswith(".parquet"):
        return pl.read_parquet(io.BytesIO(content)).to_dicts()
    return [json.loads(line) for line in content.decode().splitlines() if line.strip()]


@dataclass
class _Rows:
    """Rows by landed file, before they are encoded: {path: rows}, and the sessions without an outcome."""

    files: dict[str, list] = field(default_factory=dict)
    unjudged: list[tuple[int, str]] = field(default_factory=list)  # (day, session)

    def add(self, table: str, n: int, name: str, row) -> None:
        self.files.setdefault(f"{table}/{day(n)}/{name}", []).append(row)


def _registration(design: Design) -> dict:
    control = design.arms[0][0]
    mde = {"time_minutes": 4.0, "score": 0.05}.get(design.metric, 0.2)
    row = {
        "schema_version": 1, "experiment_id": design.experiment_id, "org_id": design.org_id,
        "task_type": design.task_type, "kind": design.kind, "hypothesis": f"{design.experiment_id} helps",
        "arms": [{"name": a, "payload": {"arm": a}, "allocation": s} for a, s in design.arms], "control_arm": control,
        "primary_metric": design.metric, "direction": design.direction, "mde": mde, "alpha": 0.05, "power": 0.8,
        "baseline_mean": design.means[control], "min_samples_per_arm": 20, "randomization_unit": design.unit,
        "metric_caps": {"time_minutes": 120.0}, "registered_at": _ts(_midnight(design.first_day)),
    }
    return {**row, **design.extra}


def _shares(design: Design, n: int) -> list[float]:
    if design.experiment_id == "fab-three" and n >= ALLOCATION_CHANGE_DAY:
        return [NEW_SHARES[a] for a, _ in design.arms]
    return [s for _, s in design.arms]


def _sessions_of_day(design: Design, n: int, rng: np.random.Generator, user_arms: dict[str, str], rows: _Rows) -> None:
    """The sessions, assignments and outcomes of ``design`` that start on day ``n``."""
    names = [a for a, _ in design.arms]
    for i in range(design.per_day):
        sid = f"{design.experiment_id}-{n:02d}-{i:02d}"
        start = _midnight(n) + dt.timedelta(minutes=int(rng.integers(30, 23 * 60)))
        if design.unit == "user":
            user = f"fab-user-{int(rng.integers(0, USERS)):02d}"
            arm = user_arms.setdefault(user, names[int(rng.integers(0, len(names)))])
        else:
            user, arm = f"person-{sid}", names[int(rng.choice(len(names), p=_shares(design, n)))]
        name = f"{design.file}.jsonl"
        if design.experiment_id == "fab-three" and n == REMOVED_FILES_DAY and i % 3 == 0:
            name = "fab-extra.jsonl"  # removed on REMOVAL_NIGHT
        rows.add("sessions", n, name, _session(design, sid, user, arm, start))
        rows.add("assignments", n, name, {
            "schema_version": 1, "session_id": sid, "experiment_id": design.experiment_id, "arm": arm,
            "unit_id": user if design.unit == "user" else sid, "assigned_at": _ts(start)})
        _outcome(design, arm, sid, start, rng, rows)


def _session(design: Design, sid: str, user: str, arm: str | None, start: dt.datetime, **kw) -> dict:
    return {
        "schema_version": 1, "session_id": sid, "org_id": design.org_id, "user_id": user, "task_type": design.task_type,
        "model": "model-x", "budget": 8000.0, "started_at": _ts(start), "ended_at": _ts(start + dt.timedelta(minutes=20)),
        "context_doc_ids": [f"doc-{arm or 'base'}"], "context_digest": f"digest-{design.experiment_id}-{arm or 'base'}",
        "experiment_id": design.experiment_id if arm else None, "delivered_arm": arm, **kw,
    }


def _outcome(design: Design, arm: str | None, sid: str, start: dt.datetime, rng: np.random.Generator, rows: _Rows) -> None:
    """One session's outcome (or none yet), filed under its recorded day."""
    draw, kind, mean = rng.random(), rng.random(), design.means.get(arm, 0.5)
    minutes = float(np.round(rng.gamma(6.25, (mean if design.metric == "time_minutes" else 20.0) / 6.25), 2))
    if kind < 0.05:
        rows.unjudged.append((_day_number(start), sid))
        return
    recorded = start + dt.timedelta(minutes=int(rng.integers(25, 200)))
    evaluator = ("grader", "1", "self_report" if kind < 0.10 else "evaluator")
    if design.org_id == "contoso" and kind > 0.9:
        evaluator = ("reviewer", "1.0", "human")
    rows.add("outcomes", _day_number(recorded), f"{design.file}.{'parquet' if design.org_id == 'fabrikam' else 'jsonl'}", {
        "schema_version": 1, "session_id": sid,
        "success": bool(draw < mean) if design.metric == "success" else bool(draw < 0.5),
        "time_minutes": minutes, "tokens": float(int(rng.integers(2000, 9000))),
        "score": float(np.round(rng.normal(mean, 0.2), 4)) if design.metric == "score" else None,
        "recorded_at": _ts(recorded), "evaluator_id": evaluator[0], "evaluator_version": evaluator[1],
        "evaluator_kind": evaluator[2]})


def _experiment_sessions(rng: np.random.Generator, rows: _Rows) -> None:
    user_arms: dict[str, dict[str, str]] = {}
    outside = Design("none", "contoso", "con-support", "other", (), "success", {}, 4)
    for n in range(1, DAYS + 1):
        for design in DESIGNS:
            stopped = design.experiment_id == "fab-reopen" and COMPLETED_DAY < n < REOPENED_DAY
            if n >= design.first_day and not stopped:
                _sessions_of_day(design, n, rng, user_arms.setdefault(design.experiment_id, {}), rows)
        for i in range(outside.per_day):  # contoso sessions in no experiment
            start = _midnight(n) + dt.timedelta(minutes=int(rng.integers(30, 20 * 60)))
            sid = f"con-outside-{n:02d}-{i}"
            rows.add("sessions", n, "contoso.jsonl", _session(outside, sid, f"con-user-{i}", None, start))
            _outcome(outside, None, sid, start, rng, rows)


def _admissions(rng: np.random.Generator, rows: _Rows) -> None:
    """Seed note 001's week of exploration admissions for contoso, and the sessions they launched."""
    events = seed_week_events(org_id="contoso", task_type="con-routing", start=day(ADMISSIONS_FROM))
    launcher = Design("none", "contoso", "con-routing", "other", (), "success", {}, 0)
    for event in events.iter_rows(named=True):
        at = event["at"]
        rows.add("admission_events", _day_number(at), "seed-week.jsonl", {"schema_version": 1, **event, "at": _ts(at)})
        if event["state"] == "launched":
            rows.add("sessions", _day_number(at), "contoso.jsonl",
                     _session(launcher, event["session_id"], "con-explorer", None, at, admission_id=event["admission_id"]))
            _outcome(launcher, None, event["session_id"], at, rng, rows)


def _dirty_rows(rows: _Rows) -> None:
    """Rows that break a rule, all on DIRTY_DAY (see the module docstring); each refers to real rows where it must."""
    n, at = DIRTY_DAY, _midnight(DIRTY_DAY) + dt.timedelta(hours=21)
    three, users, mem = (next(d for d in DESIGNS if d.experiment_id == e) for e in ("fab-three", "fab-users", "fab-mem"))
    rows.add("sessions", n, "fabrikam.jsonl", '{"schema_version": 1, "session_id": "dirty-broken", "org_id": ')
    rows.add("sessions", n, "fabrikam.jsonl", {**_session(three, "dirty-time", "p", "baseline", at), "started_at": "2026-10-1?T25:61"})
    rows.add("sessions", n, "fabrikam.jsonl", {**_session(three, "dirty-ended", "p", "baseline", at), "ended_at": _ts(at - dt.timedelta(hours=1))})
    rows.add("experiments", n, "fabrikam.jsonl", {**_registration(mem), "mde": 0.05, "registered_at": _ts(at)})
    for sid, arm, delivered in (("dirty-arm", "order_z", "order_z"), ("dirty-mismatch", "baseline", "order_a"),
                                ("dirty-early", "baseline", "baseline")):
        rows.add("sessions", n, "fabrikam.jsonl", _session(three, sid, f"person-{sid}", delivered, at))
        rows.add("assignments", n, "fabrikam.jsonl", {"schema_version": 1, "session_id": sid, "experiment_id": "fab-three",
                                                      "arm": arm, "unit_id": sid, "assigned_at": _ts(at)})
    first = rows.files[f"assignments/{day(n)}/fabrikam.jsonl"][0]
    other = next(a for a, _ in three.arms if a != first["arm"])
    rows.add("assignments", n, "fabrikam.jsonl", {**first, "arm": other, "assigned_at": _ts(at)})  # a repeated coin flip
    switched = next(r for r in rows.files[f"assignments/{day(n)}/fabrikam.jsonl"] if r["experiment_id"] == users.experiment_id)
    arm = next(a for a, _ in users.arms if a != switched["arm"])  # the same user, the other arm, the next day
    rows.add("sessions", n + 1, "fabrikam.jsonl", _session(users, "dirty-both-arms", switched["unit_id"], arm, at + dt.timedelta(days=1)))
    rows.add("assignments", n + 1, "fabrikam.jsonl", {**switched, "session_id": "dirty-both-arms", "arm": arm,
                                                      "assigned_at": _ts(at + dt.timedelta(days=1))})
    good = {"schema_version": 1, "success": True, "time_minutes": 10.0, "tokens": 5000.0, "score": None,
            "recorded_at": _ts(at + dt.timedelta(minutes=30)), "evaluator_id": "grader", "evaluator_version": "1",
            "evaluator_kind": "evaluator"}
    for row in ({"session_id": "dirty-early", "recorded_at": _ts(at - dt.timedelta(minutes=5))},
                {"session_id": "dirty-mismatch", "tokens": -5.0}, {"session_id": "dirty-arm", "score": float("nan")},
                {"session_id": None}, {"session_id": "dirty-mismatch", "success": None, "time_minutes": None, "tokens": None,
                                       "evaluator_id": "empty"},
                {"session_id": "never-landed"}, {"session_id": "dirty-mismatch"}):
        rows.add("outcomes", n, "fabrikam.parquet", {**good, **row})


def _snapshots(rng: np.random.Generator, rows: _Rows) -> None:
    """fab-export's cumulative per-arm statistics, one snapshot per arm, metric and day (days 2 to 20)."""
    totals = {(arm, metric): [0, 0.0, 0.0] for arm in ("control", "variant") for metric in ("success", "metric_2")}
    for n in range(2, 21):
        for (arm, metric), acc in totals.items():
            k = int(rng.integers(40, 60))
            values = (rng.random(k) < SNAPSHOT_DESIGN.means[arm]).astype(float) if metric == "success" \
                else np.round(rng.normal(10.0 if arm == "control" else 10.4, 3.0, k), 3)
            acc[0], acc[1], acc[2] = acc[0] + k, acc[1] + float(values.sum()), acc[2] + float((values ** 2).sum())
            mean = acc[1] / acc[0]
            rows.add("arm_snapshots", n, "export.jsonl", {
                "schema_version": 1, "experiment_id": SNAPSHOT_DESIGN.experiment_id, "arm": arm, "metric": metric,
                "at": _ts(_midnight(n) + dt.timedelta(hours=23)), "n": acc[0], "mean": round(mean, 12),
                "variance": round(max((acc[2] - acc[0] * mean * mean) / (acc[0] - 1), 0.0), 12)})


def _registrations(rows: _Rows) -> None:
    """Registrations and status events: active at registration, the allocation change, completion and reopening."""
    def event(eid, status, at, reason, **kw):
        return {"schema_version": 1, "experiment_id": eid, "status": status, "at": _ts(at), "reason": reason, **kw}

    for design in (*DESIGNS, SNAPSHOT_DESIGN):
        name = f"{design.experiment_id}.jsonl" if design is LATE_DESIGN else f"{design.file}.jsonl"
        rows.add("experiments", design.first_day, name, {**_registration(design), **(
            {"metric_caps": None} if design is SNAPSHOT_DESIGN else {})})
        rows.add("experiment_events", design.first_day, name,
                 event(design.experiment_id, "active", _midnight(design.first_day) + dt.timedelta(minutes=1), "launched"))
    rows.add("experiment_events", ALLOCATION_CHANGE_DAY, "fabrikam.jsonl",
             event("fab-three", "active", _midnight(ALLOCATION_CHANGE_DAY), "even the arms", allocation=NEW_SHARES))
    rows.add("experiment_events", COMPLETED_DAY, "fabrikam.jsonl",
             event("fab-reopen", "completed", _midnight(COMPLETED_DAY) + dt.timedelta(hours=12), "looked done"))
    rows.add("experiment_events", REOPENED_DAY, "fabrikam.jsonl",
             event("fab-reopen", "reopened", _midnight(REOPENED_DAY), "a new prompt build"))


def _due(path: str) -> int:
    """The night a file first lands: the night of its day, but for the files landed late on purpose."""
    table, folder, name = path.split("/")
    n = (dt.date.fromisoformat(folder) - START).days + 1
    if (table, n) == ("sessions", HELD_SESSIONS_DAY) and name == "fabrikam.jsonl" or n == QUIET_NIGHT:
        return HELD_SESSIONS_LAND
    if table == "experiments" and name == f"{LATE_DESIGN.experiment_id}.jsonl":
        return REGISTRATION_LANDS
    return n


def _land(history: History, rows: _Rows) -> None:
    for path, found in rows.files.items():
        history.land(path, encode(path, found), _due(path))
        if path.endswith("/fab-extra.jsonl"):
            history.land(path, None, REMOVAL_NIGHT)


def _correct_contoso_day(history: History) -> None:
    """Night CORRECTION_NIGHT: contoso's sessions and outcomes of CORRECTED_CONTOSO_DAY, corrected."""
    sessions_path, outcomes_path = (f"{t}/{day(CORRECTED_CONTOSO_DAY)}/contoso.jsonl" for t in ("sessions", "outcomes"))
    sessions, outcomes = decode(sessions_path, history.first(sessions_path)), decode(outcomes_path, history.first(outcomes_path))
    judged = {o["session_id"]: o for o in outcomes}
    untouched = set(judged) - {o["session_id"] for o in outcomes[:6]}
    in_experiment = [s for s in sessions if s["experiment_id"] and s["session_id"] in untouched]
    removed, added = in_experiment[0], judged[in_experiment[-1]["session_id"]]
    sessions[0]["model"] = "model-corrected"                       # a changed value
    sessions = [s for s in sessions if s is not removed]            # a removed session: its outcome is held back
    for row in outcomes[:3]:                                        # verdicts and scores corrected
        row.update(success=not row["success"], score=None if row["score"] is None else round(row["score"] + 0.1, 4))
    for row in outcomes[3:5]:
        row["time_minutes"] = round(row["time_minutes"] + 5.0, 2)   # times corrected
    del outcomes[5]                                                 # a removed outcome
    outcomes.append({**added, "success": not added["success"], "recorded_at": f"{day(CORRECTED_CONTOSO_DAY)}T23:59:00+00:00",
                     "evaluator_id": "reviewer", "evaluator_version": "1.0", "evaluator_kind": "human"})  # an added row
    history.facts["removed_session"] = removed["session_id"]
    history.land(sessions_path, encode(sessions_path, sessions), CORRECTION_NIGHT)
    history.land(outcomes_path, encode(outcomes_path, outcomes), CORRECTION_NIGHT)


def _correct_fab_mem(history: History, n: int, night: int, step: int) -> None:
    """On ``night``, fabrikam's outcomes of day ``n`` corrected: every ``step``-th verdict of ``fab-mem`` flipped."""
    path = f"outcomes/{day(n)}/fabrikam.parquet"
    corrected = decode(path, history.first(path))
    for row in [r for r in corrected if r["session_id"].startswith("fab-mem-") and r["evaluator_kind"] == "evaluator"][::step]:
        row["success"] = not row["success"]
    history.land(path, encode(path, corrected), night)


def _late_outcomes(history: History, rows: _Rows) -> None:
    """Outcomes of sessions of earlier days that had none, recorded (and so landed) on LATE_OUTCOMES_DAY."""
    waiting = [sid for n, sid in rows.unjudged if n in LATE_OUTCOME_SESSION_DAYS]
    at = _midnight(LATE_OUTCOMES_DAY) + dt.timedelta(hours=10)
    late = [{"schema_version": 1, "session_id": sid, "success": i % 2 == 0, "time_minutes": 15.0 + i % 7, "tokens": 4000.0,
             "score": 0.5 + i % 3 / 10, "recorded_at": _ts(at + dt.timedelta(minutes=i)), "evaluator_id": "grader",
             "evaluator_version": "1", "evaluator_kind": "evaluator"} for i, sid in enumerate(waiting)]
    path = f"outcomes/{day(LATE_OUTCOMES_DAY)}/late-outcomes.jsonl"
    history.facts["late_outcomes"] = len(late)
    history.land(path, encode(path, late), LATE_OUTCOMES_DAY)


def _reevaluation(history: History, rows: _Rows) -> None:
    """A later evaluator version judges verified sessions of REEVALUATED_DAYS again, recorded on REEVALUATION_DAY."""
    removed = {r["session_id"] for p, found in rows.files.items() if p.endswith("/fab-extra.jsonl") for r in found}
    judged = [r for n in REEVALUATED_DAYS for p in (f"outcomes/{day(n)}/fabrikam.parquet", f"outcomes/{day(n)}/contoso.jsonl")
              for r in rows.files.get(p, []) if r["evaluator_kind"] in ("evaluator", "human")
              and (r["session_id"] or "").startswith(("fab-mem-", "fab-three-", "fab-users-", "con-score-"))
              and r["session_id"] not in removed]
    at = _midnight(REEVALUATION_DAY) + dt.timedelta(hours=12)
    again = []
    for i, r in enumerate(judged[::2]):
        flip = i % 2 == 0
        again.append({**r, "success": r["success"] != flip, "score": None if r["score"] is None else round(r["score"] + 0.05 * flip, 4),
                      "recorded_at": _ts(at + dt.timedelta(minutes=i)), "evaluator_version": f"{r['evaluator_version']}.1"})
    path = f"outcomes/{day(REEVALUATION_DAY)}/re-evaluation.jsonl"
    history.facts["re_evaluations"] = len(again)
    history.land(path, encode(path, again), REEVALUATION_DAY)


def every_night() -> bool:
    """Whether ``ZCL_EVERY_NIGHT`` asks for all 30 nights (else :data:`REDUCED_NIGHTS`)."""
    return os.environ.get("ZCL_EVERY_NIGHT", "") not in ("", "0")


def build_history(seed: int = SEED, all_nights: bool | None = None) -> History:
    """The history of the module docstring; ``all_nights`` (default: :func:`every_night`) runs all 30 nights."""
    if all_nights is None:
        all_nights = every_night()
    rng = np.random.default_rng(seed)
    rows = _Rows()
    _registrations(rows)
    _experiment_sessions(rng, rows)
    _admissions(rng, rows)
    _dirty_rows(rows)
    _snapshots(rng, rows)
    history = History(nights=tuple(range(1, DAYS + 1)) if all_nights else REDUCED_NIGHTS)
    _land(history, rows)
    _correct_contoso_day(history)
    _correct_fab_mem(history, CORRECTED_FABRIKAM_DAY, CORRECTION_NIGHT, 3)
    _correct_fab_mem(history, SECOND_CORRECTED_DAY, REMOVAL_NIGHT, 4)
    _late_outcomes(history, rows)
    _reevaluation(history, rows)
    return history
