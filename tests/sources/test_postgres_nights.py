"""Three nights of a real ZCL PostgreSQL database landed incrementally equal a fresh load each night.

The seed's schema (tests/sources/migrations) holds a week of one organization and task type:
five experiments (the fifth beyond the family's four alpha slots), sessions, assignments and
outcomes. Between nights rows arrive late (inside the look-back window, and older than it),
an outcome is corrected, an experiment completes, a session is deleted (with its assignment
and outcome, by the schema's ON DELETE CASCADE) and an outcome is deleted. After each night
the landing folder holds byte for byte the files of a fresh load of the source as it is, and
the warehouse the nightly job built night by night holds the tables of a fresh load.
"""

import datetime as dt
import json

import duckdb
import polars as pl
import pytest

from tests.sources import zcl_world as world
from tests.sources.postgres_server import execute_script
from tests.warehouse_checks import conservation_gaps, run_one_night, table_rows
from zcl_assets.sources.config import load_config
from zcl_assets.sources.sync import sync_postgres

SEED = 25
NIGHTS = ("2026-11-04", "2026-11-06", "2026-11-08")
COMPARED = {
    "staged_experiments": (), "staged_experiment_events": (), "staged_sessions": (), "staged_assignments": (),
    "staged_outcomes": (), "quarantine": ("quarantined_at",), "experience": (), "experiment_plans": ("planned_at",),
    "experiment_analysis": ("analysed_at",),
}
REGISTRATION = """
lookback_hours: 24
registration: {org_id: acme, mde: 0.15, baseline_mean: 0.45, min_samples_per_arm: 20}
experiments:
  {first}: {kind: inclusion}
evaluators:
  code_review: {id: unit-tests, version: "2.1", kind: evaluator}
"""


def _late_in_window(table, row):
    """Day 2's outcomes of every tenth session come a night late (inside the 24 h look-back)."""
    return not (table == "zcl_outcomes" and row["recorded_at"].date() == world.START.date() + dt.timedelta(days=2)
                and row["id"] in LATE_OUTCOMES)


LATE_OUTCOMES: set[str] = set()
OLD_LATE_SESSION = {"day": 0, "index": 7}  # its assignment arrives two nights late, beyond the look-back


def _keep_night_one(table, row):
    old = world.day_rows(SEED, OLD_LATE_SESSION["day"])["zcl_experiment_assignments"][OLD_LATE_SESSION["index"]]
    return _late_in_window(table, row) and row["id"] != old["id"]


def _files(landing):
    return {p.relative_to(landing).as_posix(): p.read_bytes() for p in sorted(landing.rglob("*.parquet"))}


def _tables(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        return {t: [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in table_rows(con, t, drop)]
                for t, drop in COMPARED.items()}


def _fresh(uri, config, tmp_path, night):
    """A fresh load of the source as it is now: new landing, new state, one run, one night."""
    landing, warehouse = tmp_path / f"fresh-{night}" / "landing", tmp_path / f"fresh-{night}" / "warehouse.duckdb"
    sync_postgres(uri, landing, tmp_path / f"fresh-{night}" / "state", config)
    run_one_night(landing, warehouse, night)
    return landing, warehouse


def _source_changes_before_night_two(uri, seed):
    day1 = world.day_rows(seed, 1)
    corrected = day1["zcl_outcomes"][3]
    execute_script(uri, f"UPDATE zcl_outcomes SET success = NOT success WHERE id = '{corrected['id']}'")
    first = world.experiments(seed)[0]
    execute_script(uri, f"UPDATE zcl_experiments SET status = 'completed', completed_at = '2026-11-06T12:00:00+00:00' "
                        f"WHERE id = '{first['id']}'")
    gone = world.day_rows(seed, 0)["zcl_sessions"][40]  # landed on night one
    execute_script(uri, f"DELETE FROM zcl_sessions WHERE id = '{gone['id']}'")
    return corrected, gone


@pytest.fixture
def source(zcl_db, tmp_path):
    config_file = tmp_path / "postgres.yaml"
    config_file.write_text(REGISTRATION.replace("{first}", world.experiments(SEED)[0]["id"]))
    day2 = world.day_rows(SEED, 2)["zcl_outcomes"]
    LATE_OUTCOMES.clear()
    LATE_OUTCOMES.update(r["id"] for r in day2[::10])
    world.insert(zcl_db, "zcl_experiments", world.experiments(SEED))
    return zcl_db, load_config(config_file)


def test_three_nights_equal_a_fresh_load_each_night(source, tmp_path):
    uri, config = source
    landing, state, warehouse = tmp_path / "landing", tmp_path / "state", tmp_path / "warehouse.duckdb"
    summaries = []

    held = world.insert_days(uri, SEED, range(0, 3), keep=_keep_night_one)
    assert len(held) == len(LATE_OUTCOMES) + 1
    summaries.append(sync_postgres(uri, landing, state, config))
    _assert_night(uri, config, landing, warehouse, tmp_path, NIGHTS[0])

    world.insert_days(uri, SEED, range(3, 5))
    world.insert_late(uri, [h for h in held if h["table"] == "zcl_outcomes"])
    corrected, gone = _source_changes_before_night_two(uri, SEED)
    summaries.append(sync_postgres(uri, landing, state, config))
    _assert_night(uri, config, landing, warehouse, tmp_path, NIGHTS[1])

    world.insert_days(uri, SEED, range(5, 7))
    world.insert_late(uri, [h for h in held if h["table"] == "zcl_experiment_assignments"])
    deleted_outcome = world.day_rows(SEED, 4)["zcl_outcomes"][0]
    execute_script(uri, f"DELETE FROM zcl_outcomes WHERE id = '{deleted_outcome['id']}'")
    incremental = sync_postgres(uri, landing, state, config, reconcile=False)
    assert incremental.windows["assignments"] == "2026-11-05"  # the watermark (day 4) minus 24 h, floored
    day0 = landing / "assignments" / "2026-11-02" / "postgres-zcl.parquet"
    assert pl.read_parquet(day0).height == world.SESSIONS_PER_DAY - 2  # one deleted, one beyond the look-back: not seen yet
    summaries.append(sync_postgres(uri, landing, state, config))
    assert pl.read_parquet(day0).height == world.SESSIONS_PER_DAY - 1  # the reconciliation finds the late one
    _assert_night(uri, config, landing, warehouse, tmp_path, NIGHTS[2])

    _assert_reported(summaries, incremental, corrected, gone, deleted_outcome)
    _assert_content(warehouse, corrected)


def _assert_night(uri, config, landing, warehouse, tmp_path, night):
    run_one_night(landing, warehouse, night)
    fresh_landing, fresh_warehouse = _fresh(uri, config, tmp_path, night)
    assert _files(landing) == _files(fresh_landing)
    assert _tables(warehouse) == _tables(fresh_warehouse)


def _assert_reported(summaries, incremental, corrected, gone, deleted_outcome):
    first, second, third = summaries
    assert first.total("deleted") == 0 and first.registrations == 5
    by_table = {(c.table, c.day): c for c in second.changes}
    assert by_table[("outcomes", "2026-11-03")].updated == 1  # the corrected outcome, outside the window
    assert by_table[("outcomes", "2026-11-04")].added == len(LATE_OUTCOMES)
    assert by_table[("sessions", "2026-11-02")].deleted_ids == (gone["id"],)
    assignment = world.day_rows(SEED, 0)["zcl_experiment_assignments"][40]
    assert by_table[("assignments", "2026-11-02")].deleted_ids == (assignment["id"],)
    outcome = [o["id"] for o in world.day_rows(SEED, 0)["zcl_outcomes"] if o["session_id"] == gone["id"]]
    assert by_table[("outcomes", "2026-11-02")].deleted_ids == tuple(outcome)
    assert ("experiment_events", "2026-11-06") in by_table
    assert incremental.total("deleted") == 1 and [c.deleted_ids for c in incremental.changes if c.deleted] == [
        (deleted_outcome["id"],)]
    # the reconciling run after the incremental one reports what only it found: the old late row
    assert [(c.table, c.day, c.added) for c in third.changes] == [("assignments", "2026-11-02", 1)]
    ledger = json.loads(second.ledger.read_text())
    assert sum(c["deleted"] for c in ledger["changes"]) == 2 + len(outcome)  # the session, its assignment and outcome


def _assert_content(warehouse, corrected):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        success = con.execute("SELECT success FROM staged_outcomes WHERE session_id = ?", [corrected["session_id"]]).fetchall()
        assert success == [(not corrected["success"],)]
        plans = dict(con.execute("SELECT experiment_id, admitted FROM experiment_plans").fetchall())
        ids = [e["id"] for e in world.experiments(SEED)]
        assert plans == {**{i: True for i in ids[:4]}, ids[4]: False}  # registered last, beyond the four slots
        refused = con.execute("SELECT record->>'experiment_id' FROM quarantine WHERE rule = 'alpha_slots_exhausted'").fetchall()
        assert refused == [(ids[4],)]
        kinds = con.execute("SELECT DISTINCT evaluator_kind, authoritative FROM verification_records").fetchall()
        assert kinds == [("evaluator", True)]
        statuses = con.execute("SELECT status, count(*) FROM staged_experiment_events GROUP BY ALL ORDER BY ALL").fetchall()
        assert statuses == [("active", 5), ("completed", 1)]
