"""Property, reduced on Spark: whatever a JSON Lines file holds, staging it with its candidate
rows computed by Spark's tasks gives the staged rows, held rows and quarantine rows (rule, reason, record, lineage)
that staging with DuckDB's reader gives.

The lines are drawn by Hypothesis as ``tests/ingest/test_contract_properties.py`` draws them
(any text, any JSON value, a valid record with any fields replaced by any JSON values), and the
file around them too: a byte-order mark or not, and each line ended by ``\\n``, ``\\r\\n``, a
stray ``\\r`` before the end, or followed by blank and white-space lines. Only UTF-8: a file that
is not is read by this process on both engines (``test_spark_staging.py`` lands one).

Each example stages one file on both engines into in-memory warehouses with the project's
schema, so most of an example's cost is Spark's (a few seconds): few examples per table, on
the three fact tables. ``tests/ingest/test_contract_properties.py`` draws many more on DuckDB.
"""

from __future__ import annotations

import json

import duckdb
import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from contracts.tables import CONTRACTS
from resources import LandingStore
from tests.ingest.test_contract_properties import _references, json_values
from tests.ingest.valid_records import DAY, VALID
from tests.warehouse_checks import conservation_gaps, exact_rows, row_differences
from zcl_assets.engine import DUCKDB
from zcl_assets.ingest.archive import load_table
from zcl_assets.ingest.staging import stage_table
from zcl_assets.portability.spark_engine import SparkEngine
from zcl_assets.warehouse import ensure_schema

SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])
"""No shrinking: each step of it stages on Spark again (minutes); a failing file is reported as drawn."""
TABLES = ("sessions", "assignments", "outcomes")
ENDINGS = (b"\n", b"\r\n", b"\r\r\n", b"\n\n", b"\n \t\n", b"\r\n\xc2\xa0\n")


def _line(table: str) -> st.SearchStrategy[bytes]:
    fields = [f.name for f in CONTRACTS[table].fields]
    return st.one_of(
        st.text(max_size=30).map(lambda t: t.replace("\n", " ").replace("\r", " ")),
        json_values.map(json.dumps),
        st.dictionaries(st.sampled_from(fields), json_values, max_size=4).map(lambda d: json.dumps({**VALID[table], **d})),
        st.just(json.dumps(VALID[table])),
    ).map(str.encode)


def _file(table: str) -> st.SearchStrategy[bytes]:
    """A whole file: an optional byte-order mark, then lines each with its own ending (the last may have none)."""
    lines = st.lists(st.tuples(_line(table), st.sampled_from(ENDINGS)), min_size=1, max_size=6)
    return st.tuples(st.booleans(), lines, st.booleans()).map(
        lambda t: (b"\xef\xbb\xbf" if t[0] else b"") + b"".join(line + end for line, end in t[1])[: None if t[2] else -1])


def _staged(root, table: str, engine) -> dict[str, object]:
    """Load and stage the landing under ``root`` with ``engine``; every row staging wrote for the probe's table."""
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        ensure_schema(con)
        computed_by = {}
        for name in dict.fromkeys(("experiments", "sessions", "assignments", table)):
            load_table(con, LandingStore(root=str(root / "landing")), root / "archive", name)
            computed_by[name] = stage_table(con, name, engine=engine).engine
        assert conservation_gaps(con, (table,)) == {}
        assert computed_by[table] == engine.name  # the probe's candidates: on Spark, by its tasks
        contract = CONTRACTS[table]
        return {t: exact_rows(con, t, where="source_file LIKE 'probe%'")
                for t in (contract.staged_table, contract.held_table)} | {
            "quarantine": exact_rows(con, "quarantine", ("quarantined_at",), "source_file LIKE 'probe%'")}


@pytest.mark.parametrize("table", TABLES)
@SETTINGS
@given(data=st.data())
def test_any_json_lines_file_stages_on_spark_as_on_duckdb(spark, tmp_path_factory, table, data):
    content = data.draw(_file(table), label="file")
    found = {}
    for name in ("duckdb", "spark"):
        root = tmp_path_factory.mktemp(f"probe_{name}")
        _references(root / "landing", table)
        folder = root / "landing" / table / DAY
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "probe.jsonl").write_bytes(content)
        engine = DUCKDB if name == "duckdb" else SparkEngine(master="local[2]", location=str(root / "lake"))
        found[name] = _staged(root, table, engine)
    differing = {t: d for t in found["duckdb"] if (d := row_differences(found["duckdb"][t], found["spark"][t]))}
    assert differing == {}, content
