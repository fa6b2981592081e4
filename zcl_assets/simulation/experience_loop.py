"""Land the exploration funnel and Experience Gain examples beside the simulated sessions.

One call for the bundled data: seed note 001's week of admission events
(:mod:`zcl_assets.simulation.admissions`) and memory-on/off runs with a true gain on three
tasks (:mod:`zcl_assets.simulation.memory_runs`), both for the organization ``fabrikam``.
"""

from __future__ import annotations

import os

from zcl_assets.simulation.admissions import SeedWeek, write_seed_week
from zcl_assets.simulation.memory_runs import MemoryRuns, simulate_memory_runs


def land_experience_loop(landing_dir: str | os.PathLike[str], seed: int, start: str) -> tuple[SeedWeek, MemoryRuns]:
    """Write the seed week (from ``start``) and memory-on/off runs (seeded by ``seed + 1``)."""
    week = write_seed_week(landing_dir, start=start)
    runs = simulate_memory_runs(landing_dir, seed=seed + 1, start=start)
    return week, runs
