"""Dagster resources: the DuckDB warehouse and the landing store."""

from resources.landing import LandingStore
from resources.warehouse import Warehouse

__all__ = ["LandingStore", "Warehouse"]
