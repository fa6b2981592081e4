"""The engine seam: where the night's heavy SQL runs, DuckDB (the embedded default) or Apache Spark.

The transformations are written once, as the DuckDB SQL files under ``sql/``. Every statement
of the nightly data path that computes a table from others (a ``CREATE [TEMP] TABLE ... AS
SELECT`` or an ``INSERT INTO ... SELECT``) of verification records, experience and the look's
per-day sums goes through :meth:`Engine.execute`:

- :class:`DuckDBEngine` runs it on the warehouse connection, as it is;
- ``zcl_assets.portability.spark_engine.SparkEngine`` translates its query with SQLGlot, runs it on
  a Spark session (local mode or a cluster) over the tables it reads, mirrored as Parquet
  under the Spark warehouse location, and hands the result back to the warehouse through
  Parquet, where the same ``CREATE`` or ``INSERT`` writes it.

The DuckDB file stays the table of record either way: the change log, the asset checks, the
statistics engine, the decisions, the reports and the UI read it and do not know which engine
computed a row. Bookkeeping statements (``DELETE`` of the rows a night replaces, the change
log) are small and run on the warehouse connection whichever engine is chosen.

Staging's candidates (every landed row read and validated by the contracts,
``zcl_assets.ingest.staging.file_candidates``) go through :meth:`Engine.file_candidates`:
DuckDB computes them on the warehouse connection; Spark on its executors, each task running
the same readers and the same generated contract SQL on an in-memory DuckDB over its share of
the files, and hands the rows to the warehouse as Parquet
(``zcl_assets.portability.spark_staging``).

:func:`engine_settings` reads the choice from ``ZCL_ENGINE`` (``duckdb`` or ``spark``),
``ZCL_SPARK_MASTER`` (``local[2]``, ``spark://host:7077``, ``yarn``, ``k8s://...`` or a Spark
Connect URL ``sc://host:15002``) and ``ZCL_SPARK_WAREHOUSE`` (a folder or URL; default
``<warehouse stem>_spark/`` beside the DuckDB file), which ``zcl run --engine spark --master
local[2]`` sets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb

from zcl_assets.ingest.readers import ArchivedFile
from zcl_assets.privacy.policy import PrivacyPolicy

if TYPE_CHECKING:
    from zcl_assets.portability.spark_staging import StageFiles

ENGINES = ("duckdb", "spark")
ENGINE_VARIABLE = "ZCL_ENGINE"
MASTER_VARIABLE = "ZCL_SPARK_MASTER"
SPARK_WAREHOUSE_VARIABLE = "ZCL_SPARK_WAREHOUSE"
DEFAULT_MASTER = "local[2]"


@dataclass(frozen=True)
class EngineSettings:
    """Which engine runs the night's SQL.

    Attributes:
        name: ``duckdb`` (the embedded default) or ``spark``.
        master: Spark's master URL (ignored by DuckDB).
        spark_warehouse: where Spark keeps its Parquet tables (a folder or a URL every executor
            and this process can read); empty: ``<warehouse stem>_spark/`` beside the DuckDB file.
    """

    name: str = "duckdb"
    master: str = DEFAULT_MASTER
    spark_warehouse: str = ""

    def __post_init__(self) -> None:
        if self.name not in ENGINES:
            raise ValueError(f"engine {self.name!r} is not one of {', '.join(ENGINES)}")

    def warehouse_location(self, duckdb_path: str) -> str:
        """The Spark warehouse location for the DuckDB warehouse at ``duckdb_path``."""
        if self.spark_warehouse:
            return self.spark_warehouse
        path = Path(duckdb_path)
        return str(path.with_name(f"{path.stem}_spark"))


def engine_settings(name: str | None = None, master: str | None = None, spark_warehouse: str | None = None) -> EngineSettings:
    """The settings given, else those of the environment (``ZCL_ENGINE``, ``ZCL_SPARK_MASTER``,
    ``ZCL_SPARK_WAREHOUSE``), else the defaults; ``ValueError`` for an unknown engine."""
    return EngineSettings(
        name=(name or os.environ.get(ENGINE_VARIABLE) or "duckdb").strip().lower(),
        master=master or os.environ.get(MASTER_VARIABLE) or DEFAULT_MASTER,
        spark_warehouse=spark_warehouse or os.environ.get(SPARK_WAREHOUSE_VARIABLE) or "",
    )


class Engine(Protocol):
    """Runs one statement of the nightly data path against the warehouse connection ``con``."""

    name: str

    def execute(self, con: duckdb.DuckDBPyConnection, text: str, params: dict | None = None) -> None:
        """Run ``text`` (one DuckDB statement, CREATE ... AS SELECT or INSERT ... SELECT, with
        ``$name`` parameters from ``params``); its rows land in the warehouse table it names."""

    def file_candidates(self, con: duckdb.DuckDBPyConnection, table: str, files: list[ArchivedFile],
                        policy: PrivacyPolicy, stage: StageFiles) -> list[str] | None:
        """The candidate rows of the archived ``files`` of ``table`` under ``policy``, computed by
        ``stage`` (``zcl_assets.ingest.staging.file_candidates`` with the table bound) wherever
        the engine runs it, as Parquet files of the columns of ``con``'s temp table
        ``candidates``; None when this process is to run ``stage`` itself."""


class DuckDBEngine:
    """The embedded default: every statement runs on the warehouse connection as written."""

    name = "duckdb"

    def execute(self, con: duckdb.DuckDBPyConnection, text: str, params: dict | None = None) -> None:
        con.execute(text, {k: v for k, v in (params or {}).items() if f"${k}" in text})

    def file_candidates(self, con: duckdb.DuckDBPyConnection, table: str, files: list[ArchivedFile],
                        policy: PrivacyPolicy, stage: StageFiles) -> list[str] | None:
        """None: the warehouse connection computes them."""
        return None


DUCKDB = DuckDBEngine()


def open_engine(settings: EngineSettings, duckdb_path: str) -> Engine:
    """The engine of ``settings`` for the warehouse at ``duckdb_path`` (Spark is started on
    first use and shared by the process)."""
    if settings.name == "duckdb":
        return DUCKDB
    from zcl_assets.portability.spark_engine import SparkEngine

    return SparkEngine(master=settings.master, location=settings.warehouse_location(duckdb_path))


__all__ = ["DUCKDB", "ENGINES", "DuckDBEngine", "Engine", "EngineSettings", "engine_settings", "open_engine"]
