"""The report's sessions, verified sessions and units as of a look come from stored daily counts;
they must equal a count over the experience rows themselves (the reference below, the query
the report ran before the counts were kept), on every day of a world that has a
user-randomized experiment with repeated users, outcomes judged the day after their
assignment, and data landed after the look, taken night by night."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import duckdb
import pytest

from sql import load_sql
from tests.end_to_end.synthetic_world import AS_OF, LATE_DAY, build_world
from tests.warehouse_checks import run_one_night
from zcl_assets.analysis.look import look_end

REFERENCE = """
WITH arms AS (
    SELECT x.experiment_id, x.arm,
           count(DISTINCT CASE WHEN x.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END) AS units,
           count(*) AS sessions,
           count(*) FILTER (WHERE x.verified AND x.recorded_at < $as_of_end) AS verified_sessions
    FROM experience x WHERE x.assigned_at < $as_of_end GROUP BY ALL
), first AS (
    SELECT experiment_id, min(assigned_at) AS first_assigned_at FROM experience GROUP BY ALL
)
SELECT a.*, f.first_assigned_at FROM arms a JOIN first f USING (experiment_id) ORDER BY ALL
"""


def _move_days(source, target, chosen) -> None:
    """Move the day folders ``<table>/<day>`` of ``source`` whose day is ``chosen`` to ``target``."""
    for folder in sorted(source.glob("*/*")):
        if chosen(folder.name):
            (target / folder.parent.name).mkdir(parents=True, exist_ok=True)
            folder.rename(target / folder.parent.name / folder.name)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("report_counts")
    landing, later = root / "landing", root / "later"
    build_world().write(landing)
    _move_days(landing, later, lambda day: day > AS_OF)  # the days after the look land on the second night
    with dg.DagsterInstance.ephemeral() as instance:  # two nights on one instance: the second one incremental
        run_one_night(landing, root / "warehouse.duckdb", AS_OF, instance)
        _move_days(later, landing, lambda day: True)
        run_one_night(landing, root / "warehouse.duckdb", LATE_DAY, instance)
    return root / "warehouse.duckdb"


def test_the_reports_counts_from_stored_days_equal_a_count_over_the_experience(warehouse):
    first = dt.date.fromisoformat(AS_OF) - dt.timedelta(days=12)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        users = con.execute("SELECT count(DISTINCT unit_id) < count(*) FROM experience WHERE randomization_unit = 'user'").fetchone()[0]
        assert users  # the world repeats users, so units and sessions differ
        compared = 0
        for offset in range((dt.date.fromisoformat(LATE_DAY) - first).days + 2):
            end = look_end((first + dt.timedelta(days=offset)).isoformat())
            stored = con.execute(load_sql("reports/count_experiment_sessions"), {"as_of_end": end}).fetchall()
            counted = con.execute(REFERENCE, {"as_of_end": end}).fetchall()
            assert stored == counted, end
            compared += len(counted)
    assert compared > 50
