"""The experience stage: verification records and the experience fact table (no Dagster)."""
