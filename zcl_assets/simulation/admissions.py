"""Seed note 001's week as admission events: 32 admissions, 13 launches, 1 useful observation.

A gate with a budget of four a day, charged at admission, wrote 32 admissions in seven UTC
days (5, 4, 6, 4, 5, 4, 4: four a day cannot hold them); 13 were launched and one launch
produced useful work. The old selector kept choosing a dead arm (``gptme:model-z``), which
was blocked after every handoff. Each admission's fate is fixed below; times are
deterministic (no randomness), so the week can be replayed exactly.

Fates: ``admitted`` (never consumed), ``consumed`` (the runner died before launch),
``blocked`` (arm rejected after consumption), or a terminal outcome after launch
(``productive``, ``unproductive``, ``failed``).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from zcl_assets.importers.landing_writer import write_landing

UTC = _dt.UTC
DEAD_ARM = "gptme:model-z"
ARMS = ("gptme:model-a", "gptme:model-b", "aider:model-c", DEAD_ARM)
_A, _B, _C, _Z = ARMS

SEED_WEEK: tuple[tuple[tuple[str, str], ...], ...] = (
    ((_Z, "blocked"), (_Z, "blocked"), (_A, "unproductive"), (_B, "failed"), (_Z, "admitted")),
    ((_Z, "blocked"), (_A, "unproductive"), (_C, "consumed"), (_B, "unproductive")),
    ((_Z, "blocked"), (_Z, "admitted"), (_A, "productive"), (_C, "unproductive"), (_B, "consumed"), (_Z, "admitted")),
    ((_Z, "blocked"), (_A, "failed"), (_C, "unproductive"), (_B, "admitted")),
    ((_Z, "blocked"), (_Z, "consumed"), (_A, "unproductive"), (_C, "failed"), (_B, "unproductive")),
    ((_Z, "blocked"), (_A, "admitted"), (_C, "consumed"), (_B, "admitted")),
    ((_Z, "consumed"), (_Z, "blocked"), (_A, "unproductive"), (_C, "failed")),
)
"""Per UTC day, the (arm, fate) of each admission in the order the gate wrote them."""

LAUNCHED_FATES = ("productive", "unproductive", "failed")


@dataclass(frozen=True)
class SeedWeek:
    """What :func:`write_seed_week` wrote and the counts the funnel must report."""

    org_id: str
    start: str
    files_written: list[Path]
    events: int
    admissions: int
    reached: dict[str, int]
    """admissions that reached each stage (admitted, consumed, launched, blocked, terminal)"""
    outcomes: dict[str, int]
    """terminal outcomes (productive, unproductive, failed)"""
    final_states: dict[str, int]
    """admissions by current state"""


def seed_week_events(org_id: str = "fabrikam", task_type: str = "routing", start: str = "2026-09-01") -> pl.DataFrame:
    """The seed week as ``admission_events`` rows (columns of the landing contract).

    The k-th admission of a day is admitted at ``01:00 + 3h * k`` UTC; consumed two minutes
    later; blocked five seconds after consumption or launched a minute after it; terminal
    forty minutes after launch.
    """
    day0 = _dt.datetime.fromisoformat(start).replace(tzinfo=UTC)
    rows: list[dict] = []
    number = 0
    for day, admissions in enumerate(SEED_WEEK):
        for k, (arm, fate) in enumerate(admissions):
            number += 1
            aid = f"{org_id}-adm-{number:03d}"
            t = day0 + _dt.timedelta(days=day, hours=1 + 3 * k)

            def event(state: str, at: _dt.datetime, session_id: str | None = None, outcome: str | None = None, aid=aid, arm=arm) -> None:
                rows.append({"admission_id": aid, "org_id": org_id, "task_type": task_type, "state": state, "at": at,
                             "arm": arm, "session_id": session_id, "outcome": outcome})

            event("admitted", t)
            if fate == "admitted":
                continue
            consumed = t + _dt.timedelta(minutes=2)
            event("consumed", consumed)
            if fate == "blocked":
                event("blocked", consumed + _dt.timedelta(seconds=5))
            elif fate in LAUNCHED_FATES:
                session = f"{org_id}-ses-{number:03d}"
                launched = consumed + _dt.timedelta(minutes=1)
                event("launched", launched, session)
                event("terminal", launched + _dt.timedelta(minutes=40), session, fate)
    return pl.DataFrame(
        rows,
        schema={"admission_id": pl.String, "org_id": pl.String, "task_type": pl.String, "state": pl.String,
                "at": pl.Datetime("us", "UTC"), "arm": pl.String, "session_id": pl.String, "outcome": pl.String},
    )


def seed_week_counts(org_id: str = "fabrikam", start: str = "2026-09-01") -> SeedWeek:
    """The counts of the seed week, from :data:`SEED_WEEK` (no files written)."""
    fates = Counter(fate for day in SEED_WEEK for _, fate in day)
    launched = sum(fates[f] for f in LAUNCHED_FATES)
    admissions = sum(fates.values())
    reached = {
        "admitted": admissions,
        "consumed": admissions - fates["admitted"],
        "launched": launched,
        "blocked": fates["blocked"],
        "terminal": launched,
    }
    final = {"admitted": fates["admitted"], "consumed": fates["consumed"], "blocked": fates["blocked"], "terminal": launched}
    events = admissions + reached["consumed"] + fates["blocked"] + 2 * launched
    return SeedWeek(org_id=org_id, start=start, files_written=[], events=events, admissions=admissions, reached=reached,
                    outcomes={f: fates[f] for f in LAUNCHED_FATES}, final_states=final)


def write_seed_week(
    landing_dir: str | os.PathLike[str], org_id: str = "fabrikam", task_type: str = "routing", start: str = "2026-09-01"
) -> SeedWeek:
    """Write the seed week as ``admission_events`` landing files (``seed-week-<org>.jsonl`` per day)."""
    events = seed_week_events(org_id, task_type, start)
    written = write_landing(events, landing_dir, "admission_events", time_column="at", name=f"seed-week-{org_id}")
    counts = seed_week_counts(org_id, start)
    return SeedWeek(**{**counts.__dict__, "files_written": sorted(written.files)})
