"""The DuckDB warehouse as a Dagster resource: a thin configurable shell over
``zcl_assets.warehouse.DuckDBWarehouse`` (connect, transactions, schema), which has no Dagster.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

import dagster as dg
import duckdb

from zcl_assets.warehouse import DEFAULT_MEMORY_LIMIT, DuckDBWarehouse


class Warehouse(dg.ConfigurableResource):
    """A DuckDB file holding raw, staged, quarantine and analysis tables.

    Attributes:
        path: path of the DuckDB file; its folder is created on first write.
        lock_timeout_s: how long a writer waits for another process's write lock.
        memory_limit: DuckDB's memory limit per connection (it spills to disk beyond it), so
            a night over 10 million sessions stays within its memory target; set by
            ``ZCL_DUCKDB_MEMORY_LIMIT`` where the warehouse is bound (``zcl_assets.definitions``).
    """

    path: str
    lock_timeout_s: float = 600.0
    memory_limit: str = DEFAULT_MEMORY_LIMIT

    @property
    def core(self) -> DuckDBWarehouse:
        """The same warehouse without Dagster, for the core packages."""
        return DuckDBWarehouse(path=self.path, lock_timeout_s=self.lock_timeout_s, memory_limit=self.memory_limit)

    @property
    def archive_dir(self) -> Path:
        return self.core.archive_dir

    def connect(self, read_only: bool = False) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """See :meth:`zcl_assets.warehouse.DuckDBWarehouse.connect`."""
        return self.core.connect(read_only)


__all__ = ["Warehouse"]
