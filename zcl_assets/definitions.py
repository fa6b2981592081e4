"""The code location: loads the ``defs/`` folder and binds the resources once.

Resource paths are resolved when a run starts (``ZCL_WAREHOUSE``, ``ZCL_LANDING_DIR`` or the
defaults under ``<project root>/data/``), never at import.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from resources import LandingStore, Warehouse
from zcl_assets.paths import default_landing_dir, default_warehouse_path

_PACKAGE_DIR = Path(__file__).resolve().parent


def build_resources(warehouse_path: str | None = None, landing_dir: str | None = None) -> dict[str, object]:
    """The resources of every run; explicit paths win over the environment and defaults."""
    return {
        "warehouse": Warehouse(path=warehouse_path or str(default_warehouse_path())),
        "landing": LandingStore(root=landing_dir or str(default_landing_dir())),
    }


@dg.definitions
def defs() -> dg.Definitions:
    """Everything under ``zcl_assets/defs`` plus the bound resources."""
    loaded = dg.load_from_defs_folder(path_within_project=_PACKAGE_DIR)
    return dg.Definitions.merge(loaded, dg.Definitions(resources=build_resources()))
