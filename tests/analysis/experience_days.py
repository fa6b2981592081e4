"""The experience's daily counts of a hand-made warehouse, built by the production SQL."""

from __future__ import annotations

import datetime as dt

import duckdb

from sql import load_sql
from zcl_assets.experience.days import _resolutions


def build_experience_days(con: duckdb.DuckDBPyConnection) -> None:
    """``internal.experience_days`` of every experiment of the ``experience`` table (which must hold
    the columns ``sql/aggregate_experience_days.sql`` reads), as ``zcl_assets.experience.days``
    keeps them; ``staged_experiments`` gives each experiment's primary metric and caps."""
    con.execute("CREATE SCHEMA IF NOT EXISTS internal")
    con.execute(load_sql("create_experience_days"))
    con.execute("CREATE OR REPLACE TEMP TABLE experience_scope AS "
                "SELECT DISTINCT experiment_id, CAST(NULL AS DATE) AS day FROM experience")
    con.register("metric_resolutions", _resolutions())
    try:
        con.execute(f"INSERT INTO internal.experience_days BY NAME {load_sql('aggregate_experience_days')}",
                    {"from_at": dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc)})
    finally:
        con.unregister("metric_resolutions")
