"""Run `zcl` as a separate process, as a user would, on a project-like DAGSTER_HOME."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def fresh_home(tmp_path: Path) -> Path:
    """A brand-new DAGSTER_HOME holding only the project's instance config."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    return home


def zcl_env(home: Path, landing: Path, warehouse: Path) -> dict[str, str]:
    """The environment of a `zcl` process on these paths."""
    return {**os.environ, "DAGSTER_HOME": str(home), "ZCL_LANDING_DIR": str(landing), "ZCL_WAREHOUSE": str(warehouse)}


def start_zcl(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "zcl_assets.cli", *args], env=env, cwd=PROJECT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
