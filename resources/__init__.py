"""Dagster resources: the DuckDB warehouse, the landing store and the compute engine."""

from resources.engine import ComputeEngine
from resources.landing import LandingStore
from resources.warehouse import Warehouse

__all__ = ["ComputeEngine", "LandingStore", "Warehouse"]
