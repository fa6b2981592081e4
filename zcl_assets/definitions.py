"""The code location: loads the ``defs/`` folder and binds the resources once.

Resource paths are resolved when a run starts (``ZCL_WAREHOUSE``, ``ZCL_LANDING_DIR`` or the
defaults under ``<project root>/data/``), never at import. ``ZCL_DUCKDB_MEMORY_LIMIT`` (a DuckDB
size such as ``4GB``) overrides the warehouse's memory limit per connection. ``ZCL_ENGINE``
(``duckdb`` or ``spark``), ``ZCL_SPARK_MASTER`` and ``ZCL_SPARK_WAREHOUSE`` choose the engine
that runs the night's SQL (``zcl_assets.engine``).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from resources import ComputeEngine, LandingStore, Warehouse
from zcl_assets.engine import engine_settings
from zcl_assets.paths import default_landing_dir, default_warehouse_path
from zcl_assets.warehouse import check_memory_limit

_PACKAGE_DIR = Path(__file__).resolve().parent
MEMORY_LIMIT_VARIABLE = "ZCL_DUCKDB_MEMORY_LIMIT"


def build_resources(warehouse_path: str | None = None, landing_dir: str | None = None) -> dict[str, object]:
    """The resources of every run; explicit paths win over the environment and defaults."""
    memory = os.environ.get(MEMORY_LIMIT_VARIABLE)
    if memory:
        check_memory_limit(memory, MEMORY_LIMIT_VARIABLE)
    engine = engine_settings()
    return {
        "engine": ComputeEngine(engine=engine.name, spark_master=engine.master, spark_warehouse=engine.spark_warehouse),
        "warehouse": Warehouse(path=warehouse_path or str(default_warehouse_path()), **({"memory_limit": memory} if memory else {})),
        "landing": LandingStore(root=landing_dir or str(default_landing_dir())),
    }


@dg.definitions
def defs() -> dg.Definitions:
    """Everything under ``zcl_assets/defs`` plus the bound resources."""
    loaded = dg.load_from_defs_folder(path_within_project=_PACKAGE_DIR)
    return dg.Definitions.merge(loaded, dg.Definitions(resources=build_resources()))
