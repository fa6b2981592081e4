"""The PostgreSQL source resource: where the ZCL database is and where its registration file lies.

A thin Dagster face of :mod:`zcl_assets.sources.sync`. The connection URI comes from the
environment (``ZCL_POSTGRES_URI``, bound as ``dg.EnvVar`` in ``zcl_assets/defs/sources``), never
from code or a file, and is redacted from every message.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

URI_VARIABLE = "ZCL_POSTGRES_URI"
CONFIG_VARIABLE = "ZCL_POSTGRES_CONFIG"
STATE_VARIABLE = "ZCL_POSTGRES_STATE_DIR"


def default_config_file(landing_dir: Path) -> Path:
    """The registration file beside the landing folder: ``<landing>/../sources/postgres.yaml``."""
    return Path(landing_dir).resolve().parent / "sources" / "postgres.yaml"


def default_state_dir(landing_dir: Path, source_name: str) -> Path:
    """The source's own bookkeeping beside the landing folder (the pipeline never reads it)."""
    return Path(landing_dir).resolve().parent / "sources" / f"postgres-{source_name}"


class PostgresSource(dg.ConfigurableResource):
    """A ZCL PostgreSQL database read by a read-only role (docs/postgres.md).

    Attributes:
        uri: ``postgresql://reader:password@host:5432/zcl`` (from ``ZCL_POSTGRES_URI``).
        config_file: the registration file (YAML); empty: ``ZCL_POSTGRES_CONFIG`` when a run
            starts, else ``<landing>/../sources/postgres.yaml`` (every default when it does not exist).
        state_dir: the source's watermarks, fingerprints and change ledger; empty:
            ``ZCL_POSTGRES_STATE_DIR``, else ``<landing>/../sources/postgres-<source_name>``.
    """

    uri: str
    config_file: str = ""
    state_dir: str = ""

    def sync(self, landing_dir: str, reconcile: bool = True):
        """Land the source's current rows in ``landing_dir``; a :class:`~zcl_assets.sources.sync.SyncSummary`."""
        from zcl_assets.sources.config import load_config
        from zcl_assets.sources.sync import sync_postgres

        config = load_config(self.config_file or os.environ.get(CONFIG_VARIABLE) or default_config_file(Path(landing_dir)))
        state = self.state_dir or os.environ.get(STATE_VARIABLE) or default_state_dir(Path(landing_dir), config.source_name)
        return sync_postgres(self.uri, landing_dir, state, config, reconcile=reconcile)
