"""The SQL files stay portable: each parses as DuckDB SQL and translates to Spark SQL (SQLGlot)
with no function SQLGlot cannot map, so the same staging rules and aggregation can run on a
distributed engine. What only DuckDB can do (reading files, parsing JSON in contract
validation) is isolated in contracts/validate.py and zcl_assets/ingest/readers.py."""

import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from sql import load_sql

SQL = Path(__file__).resolve().parents[1] / "sql"
# Functions SQLGlot passes through by name that Spark has with the same meaning.
SAME_IN_SPARK = {"to_json"}


@pytest.mark.parametrize("path", sorted(SQL.rglob("*.sql")), ids=lambda p: p.relative_to(SQL).as_posix())
def test_sql_file_translates_to_spark(path):
    # as the pipeline reads it (its fragments included), identifiers filled in from the contracts
    text = re.sub(r"\{(\w+)\}", r"\1_placeholder", load_sql(path.relative_to(SQL).with_suffix("").as_posix()))
    trees = sqlglot.parse(text, read="duckdb")
    unmapped = {f.name.lower() for tree in trees if tree for f in tree.find_all(exp.Anonymous)} - SAME_IN_SPARK
    assert not unmapped, f"DuckDB-only functions: {sorted(unmapped)}"
    assert sqlglot.transpile(text, read="duckdb", write="spark", unsupported_level=ErrorLevel.RAISE)
