"""Where the project's files are: resolved from the project root, never the working directory.

The project root is the folder holding ``pyproject.toml`` above this package (an editable
install or a checkout). For a non-editable install, with no such folder, ``ZCL_HOME`` names
it and otherwise the current directory is used; the SQL files and YAML contracts ship inside
the installed packages and are found either way.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def project_root() -> Path:
    """Return the project root folder (see module docstring)."""
    if os.environ.get("ZCL_HOME"):
        return Path(os.environ["ZCL_HOME"]).resolve()
    candidate = _PACKAGE_DIR.parent
    if (candidate / "pyproject.toml").exists():
        return candidate
    return Path.cwd().resolve()


def default_landing_dir() -> Path:
    """Landing folder: ``ZCL_LANDING_DIR`` or ``<project root>/data/landing``."""
    env = os.environ.get("ZCL_LANDING_DIR")
    return Path(env).resolve() if env else project_root() / "data" / "landing"


def default_warehouse_path() -> Path:
    """DuckDB file: ``ZCL_WAREHOUSE`` or ``<project root>/data/warehouse.duckdb``."""
    env = os.environ.get("ZCL_WAREHOUSE")
    return Path(env).resolve() if env else project_root() / "data" / "warehouse.duckdb"


def bundled_dir() -> Path:
    """Folder of the bundled example data (ASOS digital experiments, CC BY 4.0)."""
    return project_root() / "bundled"
