"""A week of the ZCL schema's rows, written into a real PostgreSQL database with plain SQL.

One organization (``acme``) and task type (``code_review``), five experiments registered on
the first morning (the fifth finds the four alpha slots of the family taken), 60 sessions a
day for seven UTC days, each assigned by a seeded coin to one experiment and arm, and an
outcome for nine sessions in ten. Everything is derived from a seed: the same seed, the same
rows and ids.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

import numpy as np

from tests.sources.postgres_server import execute_script

START = dt.datetime(2026, 11, 2, tzinfo=dt.timezone.utc)
DAYS = 7
SESSIONS_PER_DAY = 60
ORG, TASK = "acme", "code_review"
EXPERIMENTS = 5


def _id(seed: int, *parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"zcl-world/{seed}/" + "/".join(map(str, parts))))


def _lit(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value)) if isinstance(value, (float, np.floating)) else str(int(value))
    if isinstance(value, dt.datetime):
        return f"'{value.isoformat()}'::timestamptz"
    if isinstance(value, (dict, list)):
        value = json.dumps(value)
    return "'" + str(value).replace("'", "''") + "'"


def insert(uri: str, table: str, rows: list[dict]) -> None:
    """INSERT rows (all with the same keys) into ``table``."""
    if not rows:
        return
    columns = list(rows[0])
    values = ",\n".join("(" + ", ".join(_lit(r[c]) for c in columns) + ")" for r in rows)
    execute_script(uri, f"INSERT INTO {table} ({', '.join(columns)}) VALUES\n{values}")


def experiments(seed: int) -> list[dict]:
    """Five experiments of one task type, registered an hour apart on the first morning."""
    kinds = [("inclusion", {"include": "docs/architecture.md"}), ("order", {"order": ["b", "a"]})]
    return [
        {"id": _id(seed, "experiment", k), "hypothesis": f"Context change {k} helps code review",
         "task_type": TASK, "treatment": {**kinds[k % 2][1], "variant": k}, "control": {"variant": "baseline"},
         "status": "active", "started_at": START + dt.timedelta(hours=k)}
        for k in range(EXPERIMENTS)
    ]


def day_rows(seed: int, day: int) -> dict[str, list[dict]]:
    """Sessions, assignments and outcomes of one UTC day (0 = the first)."""
    rng = np.random.default_rng([seed, day])
    exps = experiments(seed)
    sessions, assignments, outcomes = [], [], []
    for i in range(SESSIONS_PER_DAY):
        started = START + dt.timedelta(days=day, hours=6, minutes=int(i * 12 + rng.integers(0, 10)))
        exp = exps[int(rng.integers(0, EXPERIMENTS))]
        arm = "treatment" if rng.random() < 0.5 else "control"
        sid = _id(seed, "session", day, i)
        sessions.append({"id": sid, "organization_id": ORG, "user_id": f"user-{int(rng.integers(0, 40)):02d}",
                         "task_type": TASK, "model": "model-a", "is_experimental": True, "experiment_id": exp["id"],
                         "experiment_group": arm, "started_at": started, "ended_at": started + dt.timedelta(minutes=25)})
        assignments.append({"id": _id(seed, "assignment", day, i), "session_id": sid, "experiment_id": exp["id"],
                            "group_name": arm, "assigned_at": started})
        if rng.random() < 0.9:
            p = 0.55 if arm == "treatment" else 0.45
            outcomes.append({"id": _id(seed, "outcome", day, i), "session_id": sid, "success": bool(rng.random() < p),
                             "time_minutes": round(float(rng.gamma(4.0, 5.0)), 2),
                             "recorded_at": started + dt.timedelta(minutes=30)})
    return {"zcl_sessions": sessions, "zcl_experiment_assignments": assignments, "zcl_outcomes": outcomes}


def insert_days(uri: str, seed: int, days: range, keep=lambda table, row: True) -> list[dict]:
    """Insert the rows of ``days``; ``keep(table, row)`` holds some back (rows that come late).
    Returns the rows held back, with their table, for a later :func:`insert_late`."""
    held = []
    for day in days:
        rows = day_rows(seed, day)
        for table in ("zcl_sessions", "zcl_experiment_assignments", "zcl_outcomes"):
            kept = [r for r in rows[table] if keep(table, r)]
            held += [{"table": table, "row": r} for r in rows[table] if not keep(table, r)]
            insert(uri, table, kept)
    return held


def insert_late(uri: str, held: list[dict]) -> None:
    for table in ("zcl_sessions", "zcl_experiment_assignments", "zcl_outcomes"):
        insert(uri, table, [h["row"] for h in held if h["table"] == table])
