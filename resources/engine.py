"""The engine seam as a Dagster resource: which engine runs the night's SQL (``zcl_assets.engine``).

Bound once in ``zcl_assets.definitions`` from ``ZCL_ENGINE``, ``ZCL_SPARK_MASTER`` and
``ZCL_SPARK_WAREHOUSE`` (``zcl run --engine spark --master local[2]`` sets them). The asset
graph, its checks and partitions are the same whichever engine runs; the assets that compute
(verification records, experience, the look's per-day sums) take this resource.
"""

from __future__ import annotations

import dagster as dg

from resources.warehouse import Warehouse
from zcl_assets.engine import DEFAULT_MASTER, Engine, EngineSettings, open_engine


class ComputeEngine(dg.ConfigurableResource):
    """Where the night's SQL runs.

    Attributes:
        engine: ``duckdb`` (embedded, the default) or ``spark``.
        spark_master: Spark's master URL: ``local[2]``, ``spark://host:7077``, ``yarn``,
            ``k8s://https://host:443`` or a Spark Connect URL ``sc://host:15002``.
        spark_warehouse: Spark's warehouse location (Parquet tables); empty: beside the DuckDB file.
    """

    engine: str = "duckdb"
    spark_master: str = DEFAULT_MASTER
    spark_warehouse: str = ""

    @property
    def settings(self) -> EngineSettings:
        return EngineSettings(self.engine, self.spark_master, self.spark_warehouse)

    def open(self, warehouse: Warehouse) -> Engine:
        """The engine for ``warehouse`` (see ``zcl_assets.engine.open_engine``)."""
        return open_engine(self.settings, warehouse.path)


__all__ = ["ComputeEngine"]
