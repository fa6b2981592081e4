"""Incremental equals fresh for a CUPED experiment whose pre-window outcome lands late.

The world of ``tests/end_to_end/cuped_world.py``, landed night by night on one instance: on
10-30 everything up to that day but the outcome of r25's session of 10-20 (before the
experiment's first assignment, in its covariate window); on 11-02 the days since and that
outcome, in a new file of the day 10-20 already loaded; on 11-06 the rest. A second warehouse
loads the final landing in one night. The look's covariates, its daily sums, its looks and the
plans must be equal row for row, floats bit for bit (as ``test_incremental_equals_fresh.py``
compares them), and the late outcome must have moved r25's covariate on the way (else the
comparison would prove less than it claims).
"""

from __future__ import annotations

import datetime as dt

import dagster as dg
import duckdb
import pytest

from tests.end_to_end import cuped_world as world
from tests.warehouse_checks import exact_rows, row_differences, run_one_night

COMPARED = {"look_unit_covariates": (), "arm_day_sums": (), "look_first_assignments": (),
            "experiment_analysis": ("analysed_at",), "experiment_plans": ("planned_at",)}


def _x(warehouse, user: str) -> int | None:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        found = con.execute("SELECT x FROM look_unit_covariates WHERE user_id = ? AND metric = 'success'", [user]).fetchone()
    return int(found[0]) if found else None


@pytest.fixture(scope="module")
def loads(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuped_incremental")
    landing, incremental = root / "incremental" / "landing", root / "incremental" / "warehouse.duckdb"
    seen = {}
    with dg.DagsterInstance.ephemeral() as instance:
        for night, late in ((dt.date(2026, 10, 30), False), (dt.date(2026, 11, 2), True), (dt.date(2026, 11, 6), True)):
            world.land(landing, late=late, until=night)
            run_one_night(landing, incremental, night.isoformat(), instance=instance)
            seen[night] = _x(incremental, "r25")
    fresh_landing, fresh = root / "fresh" / "landing", root / "fresh" / "warehouse.duckdb"
    world.land(fresh_landing)
    run_one_night(fresh_landing, fresh, "2026-11-06")
    return incremental, fresh, seen


def test_the_late_outcome_moved_the_covariate_on_the_way(loads):
    _, _, seen = loads
    # r25: a success on 10-10; its failure of 10-20 lands on 11-02: mean 1, then 0.5
    assert seen == {dt.date(2026, 10, 30): 1_000_000, dt.date(2026, 11, 2): 500_000, dt.date(2026, 11, 6): 500_000}


@pytest.mark.parametrize("table", list(COMPARED))
def test_the_nights_give_the_tables_of_a_fresh_load(loads, table):
    incremental, fresh, _ = loads
    rows = []
    for path in (incremental, fresh):
        with duckdb.connect(str(path), read_only=True) as con:
            rows.append(exact_rows(con, table, COMPARED[table]))
    assert sum(rows[1].values()) > 0 and row_differences(*rows) == ""
