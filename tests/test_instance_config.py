"""The committed dagster_home/dagster.yaml is a valid instance config with the DuckDB pool limit."""

import shutil
from pathlib import Path

import dagster as dg

PROJECT = Path(__file__).resolve().parents[1]


def test_instance_config_loads_with_pool_limit_one(tmp_path, monkeypatch):
    shutil.copy(PROJECT / "dagster_home" / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.get() as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
