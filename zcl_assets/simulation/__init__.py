"""Simulated ZCL landing data with known true effects (no Dagster imports)."""

from zcl_assets.simulation.sessions import (
    DIRTY_KINDS,
    ExperimentTruth,
    SimulationSummary,
    simulate_sessions,
)

__all__ = ["DIRTY_KINDS", "ExperimentTruth", "SimulationSummary", "simulate_sessions"]
