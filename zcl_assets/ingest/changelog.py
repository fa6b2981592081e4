"""The change log: which keys changed in which table, so that derived tables rebuild only those.

Every pass that changes a table (staging a day, rebuilding the verification records of some
sessions, ...) appends the keys of the rows it wrote or removed to ``internal.change_log``
under one new sequence number (nothing while none of its consumers has a cursor yet, as on a
first load: they all rebuild in full). A table derived from it (a *consumer*) keeps a cursor in
``internal.change_cursors``: the last sequence number it has read and the fingerprint of the
code that built it. A consumer whose cursor is missing, or was written by other code, rebuilds
in full; otherwise it reads the rows after its cursor and rebuilds what their keys touch, then
moves its cursor in the same transaction as its writes, so a killed pass leaves both as they
were and the next pass reads the same changes again.

Keys are reported generously: a key that did not really change costs a little work and
changes nothing, a key left out would be a row that is never rebuilt.

A consumer also rebuilds in full when one of its sources changed nearly whole (at least
``FULL_REBUILD_ROWS`` keys, and more than half of that source's rows: staging re-checked every
row of a table after a change of its rules, say). Replacing most of a table key by key costs
more than building it again, and at 10M rows it held more than DuckDB's memory limit: the
experience's rebuild of 10.3M pairs failed, and with its cursor unmoved every later night
would have too.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from zcl_assets.warehouse import has_table

CONSUMERS: dict[str, tuple[str, ...]] = {
    "staged_experiment_events": ("staged_experiments",),
    "staged_assignments": ("staged_experiments",),
    "staged_outcomes": ("staged_sessions", "staged_assignments"),
    "staged_arm_snapshots": ("staged_experiments",),
    "verification_records": ("staged_outcomes", "staged_sessions"),
    "experience": ("staged_experiments", "staged_sessions", "staged_assignments", "verification_records"),
    "experiment_plans": ("staged_experiments", "staged_experiment_events"),
    "look_state": ("staged_experiments", "staged_experiment_events", "staged_sessions", "staged_assignments",
                   "staged_outcomes", "staged_arm_snapshots", "experience", "experiment_plans"),
    "loop_health": ("staged_sessions", "verification_records"),
    "experience_gain": ("staged_experiments", "experience"),
    "experience_days": ("experience",),
    "funnel": ("staged_admission_events",),
    "exploration_share": ("staged_sessions",),
}
"""Each consumer and the sources whose changes it reads."""

FULL_REBUILD_ROWS = 1_000_000
"""The fewest changed keys of one source that make its consumers rebuild in full (when they are
also more than half of the source's rows)."""


@dataclass(frozen=True)
class Changes:
    """What a consumer has to read.

    Attributes:
        full: rebuild everything (no cursor, or another fingerprint); ``relation`` is then empty.
        upto: the sequence number to move the cursor to once the changes are applied.
        relation: a temp table ``(source, experiment_id, session_id, day)`` of the changed keys.
    """

    full: bool
    upto: int
    relation: str


def next_seq(con: duckdb.DuckDBPyConnection) -> int:
    """A new sequence number for one pass's changes."""
    return int(con.execute("SELECT nextval('internal.change_seq')").fetchone()[0])


def record(con: duckdb.DuckDBPyConnection, source: str, select_sql: str, params: dict | None = None) -> int:
    """Append the keys selected by ``select_sql`` (columns ``experiment_id, session_id, day``) for ``source``.

    Call inside the transaction that changes ``source``. Returns the sequence number used.

    Nothing is appended while no consumer of ``source`` has a cursor (the first load): each of
    them rebuilds in full when it runs, which reads no change, so the rows would never be read.
    """
    seq = next_seq(con)
    if not _has_reader(con, source):
        return seq
    con.execute(
        f"INSERT INTO internal.change_log SELECT DISTINCT CAST($seq AS BIGINT), CAST($source AS VARCHAR), "
        f"CAST(experiment_id AS VARCHAR), CAST(session_id AS VARCHAR), CAST(day AS DATE) FROM ({select_sql})",
        {**(params or {}), "seq": seq, "source": source},
    )
    return seq


def _has_reader(con: duckdb.DuckDBPyConnection, source: str) -> bool:
    """Whether some consumer of ``source`` has a cursor, so would read its changes."""
    readers = [consumer for consumer, sources in CONSUMERS.items() if source in sources]
    return bool(con.execute(
        "SELECT count(*) FROM internal.change_cursors WHERE list_contains($readers, consumer)", {"readers": readers}
    ).fetchone()[0])


def changes_since(con: duckdb.DuckDBPyConnection, consumer: str, fingerprint: str) -> Changes:
    """The changes of ``consumer``'s sources after its cursor, as the temp table ``changes_<consumer>``."""
    sources = list(CONSUMERS[consumer])
    row = con.execute("SELECT seq, fingerprint FROM internal.change_cursors WHERE consumer = ?", [consumer]).fetchone()
    top = con.execute("SELECT max(seq) FROM internal.change_log").fetchone()[0]
    relation = f"changes_{consumer}"
    full = row is None or row[1] != fingerprint
    cursor = 0 if full else int(row[0])
    upto = max(cursor, int(top or 0))
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {relation} AS SELECT source, experiment_id, session_id, day FROM internal.change_log "
        "WHERE NOT $full AND seq > $cursor AND seq <= $upto AND list_contains($sources, source)",
        {"full": full, "cursor": cursor, "upto": upto, "sources": sources},
    )
    if not full and _mostly_changed(con, relation):
        con.execute(f"DELETE FROM {relation}")
        full = True
    return Changes(full, upto, relation)


def _mostly_changed(con: duckdb.DuckDBPyConnection, relation: str) -> bool:
    """Whether one source in the changes ``relation`` has ``FULL_REBUILD_ROWS`` changed keys or more,
    and more than half as many as its rows (a source that is not a table has none)."""
    large = con.execute(f"SELECT source FROM {relation} GROUP BY source HAVING count(*) >= $least",
                        {"least": FULL_REBUILD_ROWS}).fetchall()
    for (source,) in large:  # keys are counted only where the changed rows alone could reach the threshold
        keys = con.execute(f"SELECT count(DISTINCT (experiment_id, session_id)) FROM {relation} WHERE source = $source",
                           {"source": source}).fetchone()[0]
        rows = con.execute(f"SELECT count(*) FROM main.{source}").fetchone()[0] if has_table(con, f"main.{source}") else 0
        if keys >= FULL_REBUILD_ROWS and keys > rows / 2:
            return True
    return False


def has_changes(con: duckdb.DuckDBPyConnection, changes: Changes) -> bool:
    """Whether there is anything to do: a full rebuild, or at least one changed key."""
    return changes.full or bool(con.execute(f"SELECT count(*) FROM {changes.relation}").fetchone()[0])


def advance(con: duckdb.DuckDBPyConnection, consumer: str, fingerprint: str, changes: Changes) -> None:
    """Move ``consumer``'s cursor past ``changes`` (inside the transaction that applies them)."""
    con.execute(
        "INSERT INTO internal.change_cursors VALUES ($consumer, $seq, $fingerprint) "
        "ON CONFLICT (consumer) DO UPDATE SET seq = excluded.seq, fingerprint = excluded.fingerprint",
        {"consumer": consumer, "seq": changes.upto, "fingerprint": fingerprint},
    )


def prune(con: duckdb.DuckDBPyConnection) -> int:
    """Delete the rows every consumer of their source has read; returns how many.

    A consumer without a cursor rebuilds in full when it next runs, so it holds nothing back.
    """
    pairs = [(c, s) for c, sources in CONSUMERS.items() for s in sources]
    con.execute("CREATE OR REPLACE TEMP TABLE consumer_sources (consumer VARCHAR, source VARCHAR)")
    con.executemany("INSERT INTO consumer_sources VALUES (?, ?)", pairs)
    return int(con.execute(
        "DELETE FROM internal.change_log l USING ("
        "  SELECT s.source, min(c.seq) AS seq FROM consumer_sources s JOIN internal.change_cursors c USING (consumer) GROUP BY ALL"
        ") r WHERE l.source = r.source AND l.seq <= r.seq"
    ).fetchone()[0])
