"""Analysis glue without Dagster: registrations to plans, arm statistics to comparisons."""
