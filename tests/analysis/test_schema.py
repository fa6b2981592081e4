"""The analysis tables are written once: DDL and report columns derive from one schema."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS, EXPERIMENT_PLANS, KNOWLEDGE_RECORDS
from zcl_assets.reports.summary import COMPARISON_COLUMNS


@pytest.mark.parametrize("table", [EXPERIMENT_ANALYSIS, EXPERIMENT_PLANS, KNOWLEDGE_RECORDS], ids=lambda t: t.name)
def test_the_ddl_creates_exactly_the_schema(table):
    con = duckdb.connect()
    assert table.ensure(con) is True
    got = con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                      "ORDER BY ordinal_position", [table.name]).fetchall()
    spelled = {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE"}
    assert got == [(c.name, spelled.get(c.sql_type, c.sql_type)) for c in table.columns]
    assert table.ensure(con) is False  # already there: kept
    # the frame the code writes has the same names and types (the write timestamp aside)
    assert list(table.polars) == [c.name for c in table.columns if c.dtype != pl.Datetime("us", "UTC")]


def test_report_columns_derive_from_the_schema_and_lead_with_the_decision():
    assert COMPARISON_COLUMNS == EXPERIMENT_ANALYSIS.report_columns
    for name in ("decision", "decision_reason", "cs_low", "cs_high", "cs_p_adjusted", "srm_sequential_p"):
        assert name in COMPARISON_COLUMNS


def test_a_derived_table_of_another_shape_is_recreated_but_knowledge_is_never_dropped():
    con = duckdb.connect()
    con.execute("CREATE TABLE experiment_analysis (as_of DATE, experiment_id VARCHAR, old_column DOUBLE)")
    con.execute("INSERT INTO experiment_analysis VALUES ('2026-01-01', 'x', 1.0)")
    assert EXPERIMENT_ANALYSIS.ensure(con) is True
    assert con.execute("SELECT count(*) FROM experiment_analysis").fetchone()[0] == 0
    con.execute("CREATE TABLE knowledge_records (record_id VARCHAR)")
    with pytest.raises(RuntimeError, match="append-only"):
        KNOWLEDGE_RECORDS.ensure(con)
