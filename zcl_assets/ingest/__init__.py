"""Ingestion without Dagster: read landed files, write raw rows, stage or quarantine them."""
