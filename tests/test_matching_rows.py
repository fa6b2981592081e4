"""``matching_rows``: the rows a lookup selects, found by row id, are those of the plain join."""

import duckdb
import pytest

from zcl_assets.warehouse import matching_rows

LOOKUPS = [
    "SEMI JOIN keys USING (k)",
    "WHERE o.k IN (SELECT k FROM keys) AND o.day <> 3",
    "SEMI JOIN keys USING (k) WHERE o.day >= 2",
    "WHERE o.k IS NULL",
]


@pytest.fixture
def con():
    """Rows in several row groups, with deletes and later inserts (row ids with gaps and out of key
    order), repeated keys and NULL keys; the keys to look up include ones that match nothing."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k VARCHAR, day INTEGER, payload VARCHAR)")
    con.execute("INSERT INTO t SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE md5(CAST(i % 50000 AS VARCHAR)) END, "
                "i % 5, 'p' || i FROM range(300000) r(i)")
    con.execute("DELETE FROM t WHERE length(payload) % 3 = 0")
    con.execute("INSERT INTO t SELECT md5(CAST(i AS VARCHAR)), 4, 'late' || i FROM range(1000) r(i)")
    con.execute("CREATE TABLE keys AS SELECT md5(CAST(i * 7 AS VARCHAR)) AS k FROM range(2000) r(i) "
                "UNION ALL SELECT 'no such key' UNION ALL SELECT NULL")
    yield con
    con.close()


def _plain(lookup: str) -> str:
    return f"SELECT * FROM t o {lookup}"


@pytest.mark.parametrize("lookup", LOOKUPS)
def test_the_rows_of_the_plain_lookup(con, lookup):
    expected = sorted(con.execute(_plain(lookup)).fetchall(), key=repr)
    assert expected  # each lookup selects some rows, and not all of them
    assert len(expected) < con.execute("SELECT count(*) FROM t").fetchone()[0]
    assert sorted(con.execute(matching_rows("t", lookup)).fetchall(), key=repr) == expected


def test_chosen_columns_and_rows_of_an_open_transaction(con):
    """Inside a transaction, rows it deleted are not found and rows it inserted are."""
    con.execute("BEGIN TRANSACTION")
    con.execute("DELETE FROM t WHERE day = 1")
    con.execute("INSERT INTO t SELECT k, 9, 'new' FROM keys WHERE k IS NOT NULL")
    lookup = "SEMI JOIN keys USING (k)"
    expected = sorted(con.execute(f"SELECT payload, day FROM t o {lookup}").fetchall())
    found = sorted(con.execute(matching_rows("t", lookup, "payload, day")).fetchall())
    con.execute("ROLLBACK")
    assert found == expected
    assert ("new", 9) in found and not any(day == 1 for _, day in found)


def test_nothing_matches(con):
    assert con.execute(matching_rows("t", "WHERE o.k = 'no such key'")).fetchall() == []
