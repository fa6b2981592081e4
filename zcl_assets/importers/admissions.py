"""Import an append-only admission ledger (JSON Lines, seed note 001's shape) as ``admission_events``.

The ledger holds one lifecycle event per line, keyed by admission id::

    {"admission_id": "8f...", "state": "admitted", "arm": "gptme:model-a", "at": "2026-09-01T08:00:00Z"}
    {"admission_id": "8f...", "state": "consumed", "at": "..."}
    {"admission_id": "8f...", "state": "launched", "session_id": "945a", "at": "..."}
    {"admission_id": "8f...", "state": "terminal", "outcome": "productive", "at": "..."}

Each line lands as it is, in ledger order, in the JSON Lines landing format of its UTC day,
so the pipeline applies the lifecycle rules it applies to every admission event (docs/funnel.md):
nothing is reshaped, merged or dropped here. What a line lacks is filled from the options:

* ``org_id`` and ``task_type``: ``"default"`` and ``"exploration"``, unless the line names them;
* ``at``: the first of the fields ``at``, ``ts``, ``timestamp``, ``time`` the line has (or
  ``time_field``), as written. A line without a time, or one that is not a JSON object, lands
  verbatim on the ledger's first day and is quarantined there with the reason
  (``missing_field``, ``malformed_record``).

The files are named after the ledger (``admissions-<file stem>.jsonl`` in each day folder), so
importing a grown or corrected ledger replaces the earlier import, day by day.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from zcl_assets.importers.landing_writer import parse_timestamps, safe_name, write_landing

TIME_FIELDS: tuple[str, ...] = ("at", "ts", "timestamp", "time")
FIELDS: tuple[str, ...] = ("admission_id", "org_id", "task_type", "state", "at", "arm", "session_id", "outcome")


@dataclass(frozen=True)
class AdmissionSummary:
    """What :func:`import_admissions` read and wrote."""

    lines: int
    events: int
    admissions: int
    states: dict[str, int]
    unreadable_lines: int
    files_written: list[Path]
    files_removed: list[Path]


def import_admissions(path: str | os.PathLike[str], landing_dir: str | os.PathLike[str], *, org_id: str = "default",
                      task_type: str = "exploration", time_field: str | None = None) -> AdmissionSummary:
    """Land the ledger at ``path`` as ``admission_events`` (see the module docstring).

    Raises:
        ValueError: the file holds no JSON object at all.
    """
    src = Path(path)
    events, unreadable = [], []
    for number, line in enumerate(src.read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        if isinstance(record, dict):
            events.append(_event(record, org_id, task_type, time_field))
        else:
            unreadable.append((number, line.decode("utf-8", errors="replace")))
    if not events:
        raise ValueError(f"{src}: no JSON object in the ledger (one lifecycle event per line)")
    frame = pl.DataFrame(events, schema={f: pl.String for f in FIELDS}, orient="row")
    fallback = parse_timestamps(frame.get_column("at")).min()
    fallback_day = fallback.date() if fallback is not None else None
    extra = {fallback_day.isoformat(): [text for _, text in unreadable]} if unreadable and fallback_day else None
    written = write_landing(frame, landing_dir, "admission_events", time_column="at", name=f"admissions-{safe_name(src.stem)}",
                            fallback_day=fallback_day, extra_lines=extra, fmt="jsonl")
    states = frame.get_column("state").value_counts(sort=True)
    return AdmissionSummary(
        lines=len(events) + len(unreadable), events=len(events), admissions=frame.get_column("admission_id").n_unique(),
        states={str(s): int(n) for s, n in states.iter_rows()}, unreadable_lines=len(unreadable),
        files_written=written.files, files_removed=written.removed_stale,
    )


def _event(record: dict, org_id: str, task_type: str, time_field: str | None) -> dict[str, object]:
    """One ledger line as an event: its own fields, the options for what it lacks."""
    names = (time_field,) if time_field else TIME_FIELDS
    at = next((record[n] for n in names if record.get(n) is not None), None)
    event = {f: record.get(f) for f in FIELDS}
    event.update(at=at, org_id=record.get("org_id", org_id), task_type=record.get("task_type", task_type))
    # text fields stay text: a value of another JSON type is kept as its JSON text, so the
    # contract refuses it with the reason instead of the importer guessing
    return {k: (v if v is None or isinstance(v, str) else json.dumps(v)) for k, v in event.items()}
