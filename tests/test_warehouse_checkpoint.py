"""A night's append is checkpointed without rewriting the row groups already stored."""

from __future__ import annotations

from contextlib import closing

import duckdb

from resources import Warehouse

ROW_GROUP = 122_880  # DuckDB's rows per row group


def _stored_row_groups(con) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Each stored row group of ``facts``: its rows (those of its first column's segments, not of
    their validity masks) and the blocks holding it."""
    rows = con.execute(
        "SELECT row_group_id, sum(count) FILTER (WHERE column_path = '[0]'), "
        "list(DISTINCT block_id ORDER BY block_id) FROM pragma_storage_info('facts') GROUP BY ALL"
    ).fetchall()
    return {group: (count, tuple(blocks)) for group, count, blocks in rows}


def _append_behind_a_partial_row_group(connect) -> tuple[dict, dict]:
    """The stored row groups of ``facts`` after a first load and after a night's append, each
    write on its own connection ``connect(read_only)``, closed (and so checkpointed) after it.

    The first load leaves one full row group and a partial one. The night appends two row groups
    and a bit: DuckDB's vacuum would merge the partial row group with the new ones (20,000 +
    2 x 122,880 + 50,000 rows fit in three row groups, not four) and so rewrite and recompress
    all of them."""
    with connect(False) as con:
        con.execute(f"CREATE TABLE facts AS SELECT i, md5(CAST(i AS VARCHAR)) AS s FROM range({ROW_GROUP + 20_000}) r(i)")
    with connect(True) as con:
        before = _stored_row_groups(con)
    assert sorted(count for count, _ in before.values()) == [20_000, ROW_GROUP]
    with connect(False) as con:
        con.execute(f"INSERT INTO facts SELECT i, md5(CAST(i AS VARCHAR)) FROM range({2 * ROW_GROUP + 50_000}) r(i)")
    with connect(True) as con:
        after = _stored_row_groups(con)
        assert con.execute("SELECT count(*), count(DISTINCT i) FROM facts").fetchone() == (
            3 * ROW_GROUP + 70_000, 2 * ROW_GROUP + 50_000)
    assert sum(count for count, _ in after.values()) == 3 * ROW_GROUP + 70_000
    return before, after


def test_an_append_leaves_the_stored_row_groups_as_they_were(tmp_path):
    warehouse = Warehouse(path=str(tmp_path / "warehouse.duckdb"))
    before, after = _append_behind_a_partial_row_group(lambda read_only: warehouse.connect(read_only=read_only))
    assert {group: after[group] for group in before} == before


def test_duckdbs_default_would_rewrite_them(tmp_path):
    """The control: with DuckDB's own settings the same append rewrites a stored row group, so
    the test above fails if the warehouse's connections lose their setting."""
    path = str(tmp_path / "plain.duckdb")
    before, after = _append_behind_a_partial_row_group(lambda read_only: closing(duckdb.connect(path, read_only=read_only)))
    assert {group: after.get(group) for group in before} != before
