"""SIGKILL `zcl run` at seeded random moments of a fresh load and of the next night.

Shared by ``test_killed_nights.py`` (two kills, in ``make test``) and
``benchmarks/killed_runs.py`` (50). A trial lands the first days of a simulated world and
kills the first night at random moments, each run starting from what the kill before it
left, then runs it to the end; then it lands one more day and does the same with the second
night. After every kill the warehouse must open and every table must read (else it is a
corruption); after every recovery every table must equal, to the last bit, the tables of
the same nights run without interruption.
"""

from __future__ import annotations

import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

from tests.end_to_end.cli_process import fresh_home, start_zcl, zcl_env
from tests.warehouse_checks import BOOKKEEPING, every_table
from zcl_assets.simulation.sessions import simulate_sessions

START, DAYS = "2026-10-01", 6
NIGHTS = ("2026-10-06", "2026-10-07")  # the first night sees 5 days of traffic, the second one more


@dataclass
class KillReport:
    """What the kills did: counts, and the moments (seconds after start) of each kill."""

    kills: int = 0
    hit_a_run: int = 0  # the kill came after the run had started writing, not during start-up
    corruptions: list[str] = field(default_factory=list)
    recoveries: int = 0
    converged: int = 0
    moments: list[float] = field(default_factory=list)


def _world(root: Path) -> Path:
    """A simulated world of DAYS days of traffic, written once and copied night by night."""
    world = root / "world"
    if not world.exists():
        simulate_sessions(world, seed=5, start=START, days=DAYS, traffic_scale=0.5)
    return world


def _land_until(world: Path, landing: Path, last_day: str) -> None:
    """Copy every day folder of the world up to ``last_day`` (the registrations included)."""
    for folder in sorted(world.glob("*/*")):
        if folder.is_dir() and folder.name <= last_day:
            target = landing / folder.parent.name / folder.name
            if not target.exists():
                shutil.copytree(folder, target)


def _run(env: dict, as_of: str) -> float:
    started = time.monotonic()
    process = start_zcl(env, "run", "--as-of", as_of)
    output = process.communicate(timeout=900)[0].decode()
    assert process.returncode == 0, output[-3000:]
    return time.monotonic() - started


def _readable(warehouse: Path) -> str | None:
    """None when the warehouse opens and every table reads whole; else what failed."""
    if not warehouse.exists():
        return None
    try:
        every_table(warehouse)
    except duckdb.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def reference(root: Path) -> tuple[list[dict], list[float]]:
    """The tables after each uninterrupted night, and each night's duration."""
    world, base = _world(root), root / "reference"
    base.mkdir()
    landing, warehouse = base / "landing", base / "warehouse.duckdb"
    env = zcl_env(fresh_home(base), landing, warehouse)
    tables, durations = [], []
    for night in NIGHTS:
        _land_until(world, landing, _previous_day(night))
        durations.append(_run(env, night))
        tables.append(every_table(warehouse, skip=tuple(BOOKKEEPING)))
    return tables, durations


def _previous_day(day: str) -> str:
    return str(np.datetime64(day) - np.timedelta64(1, "D"))


def kill_trials(root: Path, trials: int, kills_per_night: int, seed: int) -> KillReport:
    """``trials`` times: kill each of the two nights ``kills_per_night`` times at random moments,
    then run it to the end and compare with the uninterrupted tables."""
    expected, durations = reference(root)
    world, rng, report = _world(root), np.random.default_rng(seed), KillReport()
    for trial in range(trials):
        base = root / f"trial-{trial}"
        base.mkdir()
        landing, warehouse = base / "landing", base / "warehouse.duckdb"
        env = zcl_env(fresh_home(base), landing, warehouse)
        for night, tables, duration in zip(NIGHTS, expected, durations):
            _land_until(world, landing, _previous_day(night))
            for _ in range(kills_per_night):
                _kill_once(env, warehouse, night, float(rng.uniform(0.3, duration)), report)
            _run(env, night)
            report.recoveries += 1
            report.converged += every_table(warehouse, skip=tuple(BOOKKEEPING)) == tables  # a killed pass numbers its own
        shutil.rmtree(base)
    return report


def _kill_once(env: dict, warehouse: Path, night: str, moment: float, report: KillReport) -> None:
    """Start the night, SIGKILL it ``moment`` seconds later, and check that the warehouse reads."""
    process = start_zcl(env, "run", "--as-of", night)
    time.sleep(moment)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    report.kills += 1
    report.moments.append(round(moment, 2))
    report.hit_a_run += b"run nightly_job" in process.stdout.read()
    broken = _readable(warehouse)
    if broken:
        report.corruptions.append(f"night {night}, kill {report.kills}: {broken}")
