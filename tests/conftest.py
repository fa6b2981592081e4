"""Shared fixtures: a fresh landing folder and warehouse per test, and the shared data folder."""

from pathlib import Path

import dagster as dg
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"


@pytest.fixture
def pipeline_paths(tmp_path, monkeypatch):
    """(landing dir, warehouse file) under tmp_path, exported as the pipeline's environment."""
    landing = tmp_path / "landing"
    warehouse = tmp_path / "warehouse.duckdb"
    monkeypatch.setenv("ZCL_LANDING_DIR", str(landing))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(warehouse))
    return landing, warehouse


@pytest.fixture
def instance():
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst
