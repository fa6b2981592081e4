"""One warehouse with looks on three nights, shared by the report tests.

Simulated ZCL sessions (eight context experiments with known effects and a few dirty rows)
plus two real experiments of the bundled ASOS data (imported, aggregate snapshots): c3d89d,
whose units are split unequally so its allocation check fires, and e4b7b9, three arms. The
looks are taken on a persistent instance in ``dagster_home/`` under the test's folder, so a
webserver can show the same runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from zcl_assets.importers.arm_snapshots import import_arm_snapshots
from zcl_assets.paths import bundled_dir, project_root
from zcl_assets.runner import run_night
from zcl_assets.simulation.sessions import SimulationSummary, simulate_sessions

NIGHTS = ("2026-10-14", "2026-10-21", "2026-10-28")
ASOS_EXPERIMENTS = ("c3d89d", "e4b7b9")
SRM_EXPERIMENT = "c3d89d"


@dataclass(frozen=True)
class Looked:
    landing: Path
    warehouse: Path
    home: Path
    simulation: SimulationSummary
    results: dict


def asos_subset(folder: Path) -> Path:
    """The bundled ASOS rows of :data:`ASOS_EXPERIMENTS` as a CSV in ``folder``."""
    source = bundled_dir() / "asos_digital_experiments" / "asos_digital_experiments_dataset.csv"
    path = folder / "asos_subset.csv"
    pl.read_csv(source).filter(pl.col("experiment_id").is_in(ASOS_EXPERIMENTS)).write_csv(path)
    return path


@pytest.fixture(scope="session")
def looked(tmp_path_factory) -> Looked:
    root = tmp_path_factory.mktemp("analyst")
    landing, warehouse, home = root / "landing", root / "warehouse.duckdb", root / "dagster_home"
    home.mkdir()
    shutil.copy(project_root() / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZCL_LANDING_DIR", str(landing))
        mp.setenv("ZCL_WAREHOUSE", str(warehouse))
        mp.setenv("DAGSTER_HOME", str(home))
        simulation = simulate_sessions(landing, seed=20261129, start="2026-10-01", days=28)
        import_arm_snapshots(asos_subset(root), landing, start_date="2026-10-01")
        results = {}
        with dg.DagsterInstance.from_config(str(home)) as instance:
            for night in NIGHTS:
                runs = run_night(instance, night)
                assert runs and all(r.success for r in runs), night
                results[night] = runs[-1]
    return Looked(landing, warehouse, home, simulation, results)
