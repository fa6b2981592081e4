"""``matching_rows``: the rows a lookup selects, found by row id, are those of the plain semi join or filter."""

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


@pytest.mark.parametrize("matches", [1, 7, 50, 51, 400])
def test_few_matches_spread_over_the_table(matches):
    """Up to 50 matches DuckDB filters by the row ids themselves, beyond by their range: both give
    the plain rows, after deletes, one of them a row an open transaction inserted."""
    con = duckdb.connect()
    con.execute("CREATE TABLE u AS SELECT md5('u' || i) AS k, i AS n FROM range(200000) r(i)")
    con.execute("DELETE FROM u WHERE n % 3 = 1")
    step = con.execute("SELECT count(*) FROM u").fetchone()[0] // matches  # spread over the whole table
    con.execute(f"CREATE TABLE few AS SELECT k FROM (SELECT k, row_number() OVER (ORDER BY n) AS r FROM u) "
                f"WHERE r % {step} = 0 LIMIT {matches - 1}")
    con.execute("BEGIN TRANSACTION")
    con.execute("INSERT INTO u VALUES ('late key', -1)")
    con.execute("INSERT INTO few VALUES ('late key')")
    lookup = "SEMI JOIN few USING (k)"
    expected = sorted(con.execute(f"SELECT * FROM u o {lookup}").fetchall())
    found = sorted(con.execute(matching_rows("u", lookup)).fetchall())
    con.execute("ROLLBACK")
    assert found == expected
    assert len(found) == matches and ("late key", -1) in found


def test_each_row_once_as_from_a_semi_join(con):
    """A lookup that joins a row to several others returns it once (the plain join repeats it)."""
    con.execute("CREATE TABLE twice AS SELECT k FROM keys WHERE k IS NOT NULL UNION ALL SELECT k FROM keys WHERE k IS NOT NULL")
    found = con.execute(matching_rows("t", "JOIN twice USING (k)")).fetchall()
    assert sorted(found, key=repr) == sorted(con.execute(_plain("SEMI JOIN twice USING (k)")).fetchall(), key=repr)
    assert len(con.execute(_plain("JOIN twice USING (k)")).fetchall()) == 2 * len(found)
