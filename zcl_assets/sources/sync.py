"""Land the ZCL PostgreSQL schema as landing files, incrementally and exactly once.

**Layout.** One Parquet file per landing table and UTC day, ``<table>/<day>/postgres-<source>.parquet``,
holding the source's current rows of that day in source id order. A day is rewritten whole
from the source whenever any of its rows changed, so the landing mirrors the source: a row
read twice lands once (it is one row of a day's file), an updated row replaces its old
version (the pipeline's correction of a landed day, docs/landing.md), a deleted row leaves
its day's file, and a day the source no longer has loses its file. The files are written
deterministically (fixed order, fixed columns), so a fresh load of the same source state
gives the same bytes, and a file whose bytes would not change is left untouched.

**Which days are read.** Per streamed table (sessions, assignments, outcomes), the server
computes, per UTC day, a fingerprint of the rows as they land (count and an order-free
digest). A day is read when its fingerprint differs from the one recorded when it was last
landed, or when its file is missing; a landed day the source no longer has is removed.

* An *incremental* run fingerprints only the days from the watermark (the latest event time
  landed) minus the look-back window, floored to the UTC day: late rows within the window,
  and updates and deletions of its days, are found with a range read.
* A *reconciling* run fingerprints every day (one aggregate scan per table; only the
  fingerprints cross the network), so late rows older than the window and updates or
  deletions of any day are found too. ``zcl import postgres`` and the nightly schedule
  reconcile; with it, every night's landing equals a fresh load of the same source state.

The small experiments table is read whole on every run (registrations and status events).

**Crash safety.** All reads share one snapshot; every file is written under a temporary name
and renamed; the state (fingerprints, watermarks, run number) is saved only after every file
and the run's change ledger are written. A run that dies anywhere is redone by the next one
from the same state, and the before-images of :mod:`zcl_assets.sources.journal` make the
reported changes exact too: nothing is lost, duplicated or reported twice.

**Reported.** Each run writes ``<state>/changes/<run>.json``: rows added, updated and deleted
per table and day (deleted rows by source id) and the registrations refused, with reasons.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from filelock import FileLock

from zcl_assets.importers.landing_writer import write_landing
from zcl_assets.sources import postgres, records
from zcl_assets.sources.config import SourceConfig
from zcl_assets.sources.journal import DayChange, Journal

STREAMED: tuple[str, ...] = ("sessions", "assignments", "outcomes")
"""The tables read by fingerprint and watermark, in reading order."""
STATE_VERSION = 1
_UTC = _dt.timezone.utc


@dataclass(frozen=True)
class SyncSummary:
    """What one run read, wrote and found changed."""

    run: int
    reconciled: bool
    windows: dict[str, str]
    """per streamed table, the first UTC day it fingerprinted (``all`` when reconciling)"""
    rows_read: dict[str, int]
    days_read: dict[str, int]
    files_written: list[Path]
    files_removed: list[Path]
    changes: list[DayChange]
    refused: dict[str, str]
    watermarks: dict[str, str | None]
    ledger: Path
    registrations: int = 0

    def total(self, what: str) -> int:
        return sum(getattr(c, what) for c in self.changes)


@dataclass
class _Run:
    """The landing side of one run: where files go and what was written."""

    landing: Path
    stem: str
    journal: Journal
    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)

    def path(self, table: str, day: str) -> Path:
        return self.landing / table / day / f"{self.stem}.parquet"

    def landed_days(self, table: str) -> set[str]:
        return {p.parent.name for p in (self.landing / table).glob(f"*/{self.stem}.parquet")}

    def write(self, table: str, day: str, frame: pl.DataFrame, time_column: str) -> None:
        path = self.path(table, day)
        self.journal.keep_before(table, day, path)
        before = _stamp(path)
        write_landing(frame, self.landing, table, time_column=time_column, name=self.stem, fallback_day=day,
                      remove_stale=False, fmt="parquet")
        if _stamp(path) != before:
            self.written.append(path)

    def remove(self, table: str, day: str) -> None:
        path = self.path(table, day)
        self.journal.keep_before(table, day, path)
        path.unlink(missing_ok=True)
        self.removed.append(path)


def _stamp(path: Path) -> tuple[int, int] | None:
    if not path.exists():
        return None
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


def sync_postgres(uri: str, landing_dir: str | os.PathLike[str], state_dir: str | os.PathLike[str],
                  config: SourceConfig, *, reconcile: bool = True) -> SyncSummary:
    """Land the source's current rows (see the module docstring); one run at a time per state folder.

    Raises:
        ConnectionError: the server cannot be reached (nothing is written).
    """
    state_path = Path(state_dir)
    state_path.mkdir(parents=True, exist_ok=True)
    with FileLock(str(state_path / "lock")):
        state = _load_state(state_path / "state.json")
        run = _Run(Path(landing_dir), f"postgres-{config.source_name}", Journal(state_path / "pending", state["run"]))
        with postgres.snapshot(uri) as cur:
            experiments = postgres.read_experiments(cur, config)
            registered, refused = records.registrations(experiments, config, config.tables["experiments"])
            _replace_table(run, "experiments", registered, "registered_at")
            _replace_table(run, "experiment_events", records.status_events(experiments), "at")
            units = records.user_randomized(registered)
            tables = {role: _sync_table(cur, run, role, config, state, units, reconcile) for role in STREAMED}
        changes = run.journal.changes(lambda table, day: run.path(table, day))
        ledger = _write_ledger(state_path, state["run"], reconcile, changes, refused)
        _save_state(state_path / "state.json", state, config, tables)
        run.journal.clear()
    return SyncSummary(
        run=state["run"], reconciled=reconcile, windows={r: t["window"] for r, t in tables.items()},
        rows_read={r: t["rows"] for r, t in tables.items()}, days_read={r: t["days_read"] for r, t in tables.items()},
        files_written=run.written, files_removed=run.removed, changes=changes, refused=refused,
        watermarks={r: t["watermark"] for r, t in tables.items()}, ledger=ledger, registrations=registered.height)


def _replace_table(run: _Run, table: str, frame: pl.DataFrame, time_column: str) -> None:
    """Land a table read whole: one file per day it has, and no file for a day it lost."""
    days = set()
    for part in frame.partition_by("day", maintain_order=True) if frame.height else []:
        day = part.item(0, "day").isoformat()
        days.add(day)
        run.write(table, day, part.drop("day"), time_column)
    for day in sorted(run.landed_days(table) - days):
        run.remove(table, day)


def _sync_table(cur, run: _Run, role: str, config: SourceConfig, state: dict, units: set[str], reconcile: bool) -> dict:
    """Fingerprint one streamed table, read and land its changed days, remove its lost days."""
    same_settings = state["digests"].get(role) == config.digest(role)
    known = state["days"].get(role, {}) if same_settings else {}
    # a registration file that lands this table's rows otherwise rewrites every day of it
    since = _window_start(state["watermarks"].get(role), config.lookback) if same_settings and not reconcile else None
    now = postgres.fingerprints(cur, config, role, since or postgres.EPOCH)
    landed = run.landed_days(role)
    first = since.date().isoformat() if since else ""
    to_read = [d for d, fp in now.items() if not fp.same_rows(_fingerprint(known.get(d.isoformat())))
               or d.isoformat() not in landed]
    rows = 0
    for day, frame in postgres.stream_days(cur, config, role, to_read):
        run.write(role, day.isoformat(), records.landing_rows(role, frame, config, units), postgres.TIME_COLUMNS[role])
        rows += frame.height
    current = {d.isoformat() for d in now}
    for day in sorted(d for d in landed if d >= first and d not in current):
        run.remove(role, day)
    days = {d: v for d, v in known.items() if d < first} | {d.isoformat(): [fp.rows, fp.digest, _iso(fp.latest)]
                                                           for d, fp in now.items()}
    latest = [v[2] for v in days.values() if v[2]]
    return {"days": days, "rows": rows, "days_read": len(to_read), "window": first or "all",
            "watermark": max(latest) if latest else None}


def _window_start(watermark: str | None, lookback: _dt.timedelta) -> _dt.datetime | None:
    """The UTC midnight on or before ``watermark - lookback``; None (every day) without a watermark."""
    if watermark is None:
        return None
    moment = _dt.datetime.fromisoformat(watermark) - lookback
    return _dt.datetime(moment.year, moment.month, moment.day, tzinfo=_UTC)


def _fingerprint(value: list | None) -> postgres.DayFingerprint | None:
    return None if value is None else postgres.DayFingerprint(int(value[0]), str(value[1]))


def _iso(moment: _dt.datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(_UTC).isoformat()


def _load_state(path: Path) -> dict:
    if not path.exists():
        return {"version": STATE_VERSION, "run": 1, "digests": {}, "watermarks": {}, "days": {}}
    state = json.loads(path.read_text(encoding="utf-8"))
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"{path}: state version {state.get('version')!r}, expected {STATE_VERSION}; remove it to reload")
    return state


def _save_state(path: Path, state: dict, config: SourceConfig, tables: dict[str, dict]) -> None:
    new = {"version": STATE_VERSION, "run": state["run"] + 1,
           "digests": {r: config.digest(r) for r in tables}, "watermarks": {r: t["watermark"] for r, t in tables.items()},
           "days": {r: t["days"] for r, t in tables.items()}}
    _write_json(path, new)


def _write_ledger(state_dir: Path, run: int, reconciled: bool, changes: list[DayChange], refused: dict[str, str]) -> Path:
    path = state_dir / "changes" / f"{run:06d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_json(path, {"run": run, "reconciled": reconciled, "changes": [c.as_dict() for c in changes],
                       "refused_registrations": refused})
    return path


def _write_json(path: Path, value: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
