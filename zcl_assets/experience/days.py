"""The daily counts of the experience, kept from its change log.

``internal.experience_days`` holds, per experiment, arm, day of assignment, day of the verified
outcome, model, budget and evaluator, how many sessions the experience has and, of the verified
ones with a value of the primary metric, their count and the exact sums of the value and its
square (``sql/aggregate_experience_days.sql``). What is read
as of a night (the report's sessions and verified sessions, the segment breakdowns) sums these
rows instead of reading the experience, so it costs what the days hold, not the history.

A night recounts the experiments and days of assignment that the experience's changes since
the last count name (every day of an experiment rebuilt whole), reading the experience from
the first of those days; the first time, or under new code, every day.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.analysis.metrics import CATALOGUE
from zcl_assets.ingest import changelog
from zcl_assets.ingest.versions import code_fingerprint
from zcl_assets.warehouse import has_table, transaction

_SQL = ("create_experience_days", "aggregate_experience_days")
_EARLIEST = dt.date(1, 1, 1)


def _resolutions() -> pl.DataFrame:
    """Each metric of the catalogue and the resolution its values are summed at."""
    return pl.DataFrame([(m.name, m.resolution) for m in CATALOGUE.values()],
                        schema={"metric": pl.String, "resolution": pl.Float64}, orient="row")


def _changes(con: duckdb.DuckDBPyConnection) -> tuple[changelog.Changes, str]:
    """The experience changes the daily counts have to read (all, the first time or under new code), and their fingerprint."""
    fingerprint = code_fingerprint(*(load_sql(n) for n in _SQL), str(_resolutions().rows()))
    built = has_table(con, "internal.experience_days")
    return changelog.changes_since(con, "experience_days", fingerprint if built else ""), fingerprint


def experience_days_pending(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether :func:`update_experience_days` would recount anything now (read-only)."""
    return changelog.has_changes(con, _changes(con)[0])


def update_experience_days(con: duckdb.DuckDBPyConnection) -> bool:
    """Bring ``internal.experience_days`` up to date with the experience; whether anything was recounted."""
    changes, fingerprint = _changes(con)
    if not changelog.has_changes(con, changes):
        return False
    source = has_table(con, "main.experience")
    scope = ("SELECT experiment_id, CAST(NULL AS DATE) AS day FROM experience GROUP BY ALL" if changes.full and source
             else f"SELECT DISTINCT experiment_id, day FROM {changes.relation} WHERE experiment_id IS NOT NULL")
    with transaction(con, metric_resolutions=_resolutions()):
        if changes.full:
            con.execute("DROP TABLE IF EXISTS internal.experience_days")
            con.execute(load_sql("create_experience_days"))
        con.execute(f"CREATE OR REPLACE TEMP TABLE experience_scope AS {scope}")
        con.execute("DELETE FROM internal.experience_days t USING experience_scope s "
                    "WHERE t.experiment_id = s.experiment_id AND (s.day IS NULL OR t.day = s.day)")
        # an experiment no longer registered has no experience rows left, whatever the changes name
        con.execute("DELETE FROM internal.experience_days WHERE experiment_id NOT IN (SELECT experiment_id FROM staged_experiments)")
        if source:
            first = con.execute("SELECT CASE WHEN bool_or(day IS NULL) THEN NULL ELSE min(day) END FROM experience_scope").fetchone()[0]
            from_at = dt.datetime.combine(first or _EARLIEST, dt.time(), tzinfo=dt.timezone.utc)
            con.execute(f"INSERT INTO internal.experience_days BY NAME {load_sql('aggregate_experience_days')}",
                        {"from_at": from_at})
        changelog.advance(con, "experience_days", fingerprint, changes)
    return True
