"""One warehouse with looks on three nights, shared by the report tests.

Simulated ZCL sessions (eight context experiments with known effects and a few dirty rows),
a real three-arm experiment of the bundled ASOS data (e4b7b9, aggregate snapshots, four
metrics) and an imported unit-level export whose 50/50 design drew 56% of its units into
control (``srm-incident``: a sample ratio mismatch that every version of the allocation
check flags). The looks are taken on a persistent instance in ``dagster_home/`` under the
test's folder, so a webserver can show the same runs.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

from zcl_assets.cli import main
from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export
from zcl_assets.importers.arm_snapshots import import_arm_snapshots
from zcl_assets.paths import bundled_dir, project_root
from zcl_assets.runner import run_night
from zcl_assets.simulation.sessions import SimulationSummary, simulate_sessions

NIGHTS = ("2026-10-14", "2026-10-21", "2026-10-28")
ASOS_EXPERIMENTS = ("e4b7b9",)
SRM_EXPERIMENT = "srm-incident"
IMPORTED = (*ASOS_EXPERIMENTS, SRM_EXPERIMENT)


@dataclass(frozen=True)
class Looked:
    landing: Path
    warehouse: Path
    home: Path
    simulation: SimulationSummary
    results: dict


def srm_incident(folder: Path, units: int = 8000, control_share: float = 0.56) -> Path:
    """A unit-level export of a 50/50 experiment whose coin favoured control (``control_share``),
    spread over 27 days so that every night sees more units. Seeded; conversion 12% in both arms."""
    rng = np.random.default_rng(8)
    control = rng.random(units) < control_share
    seconds = np.sort(rng.integers(0, 27 * 86_400, units))
    start = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
    frame = pl.DataFrame({
        "user_id": [f"u{i:05d}" for i in range(units)],
        "timestamp": [(start + dt.timedelta(seconds=int(s))).isoformat() for s in seconds],
        "group": np.where(control, "control", "treatment"),
        "landing_page": np.where(control, "old_page", "new_page"),
        "converted": (rng.random(units) < 0.12).astype(int),
    })
    path = folder / "srm_incident.csv"
    frame.write_csv(path)
    return path


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
        import_ab_export(srm_incident(root), landing, AbExportOptions(
            experiment_id=SRM_EXPERIMENT, variant_map={"control": "old_page", "treatment": "new_page"}, baseline_mean=0.12,
            mde=0.02,
        ))
        results = {}
        with dg.DagsterInstance.from_config(str(home)) as instance:
            for night in NIGHTS:
                runs = run_night(instance, night)
                assert runs and all(r.success for r in runs), night
                results[night] = runs[-1]
    return Looked(landing, warehouse, home, simulation, results)


BUNDLED_NIGHT = "2026-11-15"
"""A month after the bundled simulated sessions end (2026-10-15): their undecided experiments are stalled."""


@dataclass(frozen=True)
class BundledNight:
    env: dict
    outputs: dict
    """the output of each command: ``import`` and ``run``"""

    @property
    def warehouse(self) -> Path:
        return Path(self.env["ZCL_WAREHOUSE"])


@pytest.fixture(scope="session")
def bundled_night(tmp_path_factory) -> BundledNight:
    """What `make run` does on a fresh clone: `zcl import bundled`, then `zcl run` (on a fixed night, so that
    the tests do not depend on the clock), on a fresh landing, warehouse and Dagster instance."""
    root = tmp_path_factory.mktemp("bundled")
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(project_root() / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {"DAGSTER_HOME": str(home), "ZCL_LANDING_DIR": str(root / "landing"), "ZCL_WAREHOUSE": str(root / "warehouse.duckdb")}
    outputs = {}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        for name, args in (("import", ["import", "bundled"]), ("run", ["run", "--as-of", BUNDLED_NIGHT])):
            result = CliRunner().invoke(main, args, catch_exceptions=False)
            assert result.exit_code == 0, result.output[-3000:]
            outputs[name] = result.output
    return BundledNight(env, outputs)
