"""Dagster definitions, one folder per domain, loaded by ``zcl_assets.definitions``."""
