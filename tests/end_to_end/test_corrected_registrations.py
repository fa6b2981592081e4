"""A registration corrected in place, or removed, gives the plans and looks of a fresh load.

Five experiments of one organization and task type register on two days; with K = 4 alpha
slots the fifth is refused (``alpha_slots_exhausted``). Before the third night the file of
``e1`` is replaced (alpha 0.05 -> 0.10, mde 0.1 -> 0.2) and the file of ``e2`` is removed.
A fresh load of the final files plans ``e1`` with alpha share 0.10 / 4 = 0.025, has no plan
of ``e2``, and admits ``e5`` into the slot ``e2`` held. The warehouse that saw the three nights
must hold the same tables."""

import shutil

import duckdb

from tests.end_to_end.test_bad_input import GOOD_EXPERIMENT, _assignment, _write
from tests.warehouse_checks import BOOKKEEPING, every_table, row_differences, run_one_night

DAYS = ("2026-10-01", "2026-10-02", "2026-10-03")
REGISTERED = {f"e{i}": (DAYS[0] if i <= 3 else DAYS[1], f"{i:02d}") for i in range(1, 6)}


def _registration(experiment, **changes):
    day, hour = REGISTERED[experiment]
    return dict(GOOD_EXPERIMENT, experiment_id=experiment, registered_at=f"{day}T{hour}:00:00+00:00", **changes)


def _land_day(landing, day, index):
    sessions = [f"{day}-{e}-{i}" for e in ("e1", "e3") for i in range(6)]
    _write(landing / "sessions" / day / "s.jsonl", [
        {"schema_version": 1, "session_id": s, "org_id": "o", "user_id": f"u-{s}", "task_type": "t",
         "started_at": f"{day}T12:00:00+00:00", "experiment_id": s.split("-")[-2],
         "delivered_arm": ("control", "treatment")[int(s[-1]) % 2]} for s in sessions])
    _write(landing / "assignments" / day / "a.jsonl", [
        _assignment(s, ("control", "treatment")[int(s[-1]) % 2], s.split("-")[-2], f"{day}T12:00:00+00:00") for s in sessions])
    _write(landing / "outcomes" / day / "o.jsonl", [
        {"schema_version": 1, "session_id": s, "success": (int(s[-1]) + index) % 3 == 0, "recorded_at": f"{day}T13:00:00+00:00",
         "evaluator_id": "grader", "evaluator_version": "1", "evaluator_kind": "evaluator"} for s in sessions])


def _comparable(warehouse):
    """Every table but the bookkeeping and the manifest of landed files (its history of file versions
    and their times differ by nature; tests/end_to_end/test_incremental_equals_fresh.py compares its
    current files)."""
    return every_table(warehouse, skip=(*BOOKKEEPING, "main.landing_manifest"))


def test_a_corrected_and_a_removed_registration_give_the_plans_and_looks_of_a_fresh_load(tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "nightly.duckdb"
    for experiment, (day, _) in REGISTERED.items():
        _write(landing / "experiments" / day / f"{experiment}.jsonl", [_registration(experiment)])
    for index, day in enumerate(DAYS[:2]):
        _land_day(landing, day, index)
        run_one_night(landing, warehouse, day)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        before = dict(con.execute("SELECT experiment_id, (admitted, alpha_share) FROM experiment_plans").fetchall())
    assert before == {"e1": (True, 0.0125), "e2": (True, 0.0125), "e3": (True, 0.0125), "e4": (True, 0.0125),
                      "e5": (False, 0.0125)}  # 0.05 / 4; e5 registered fifth with four live

    _write(landing / "experiments" / DAYS[0] / "e1.jsonl", [_registration("e1", alpha=0.1, mde=0.2)])
    (landing / "experiments" / DAYS[0] / "e2.jsonl").unlink()
    _land_day(landing, DAYS[2], 2)
    run_one_night(landing, warehouse, DAYS[2])

    fresh_landing, fresh = tmp_path / "fresh" / "landing", tmp_path / "fresh" / "fresh.duckdb"
    shutil.copytree(landing, fresh_landing)
    run_one_night(fresh_landing, fresh, DAYS[2])
    with duckdb.connect(str(fresh), read_only=True) as con:
        after = dict(con.execute("SELECT experiment_id, (admitted, alpha_share) FROM experiment_plans").fetchall())
        refused = con.execute("SELECT count(*) FROM quarantine WHERE rule = 'alpha_slots_exhausted'").fetchone()[0]
    assert after == {"e1": (True, 0.025), "e3": (True, 0.0125), "e4": (True, 0.0125), "e5": (True, 0.0125)}
    assert refused == 0
    nightly_tables, fresh_tables = _comparable(warehouse), _comparable(fresh)
    assert sorted(nightly_tables) == sorted(fresh_tables)
    assert {t: row_differences(nightly_tables[t], fresh_tables[t]) for t in fresh_tables
            if nightly_tables[t] != fresh_tables[t]} == {}


def _admitted(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return dict(con.execute("SELECT experiment_id, admitted FROM experiment_plans").fetchall())


def test_a_removed_lifecycle_event_and_a_late_registration_give_the_plans_of_a_fresh_load(tmp_path):
    """``e1`` completes on the second day, so ``e5`` (third day) takes its slot. Before the fourth
    night the completion's file is removed: e1 is live throughout, so e5 finds four live
    experiments and is refused. Before the fifth, ``e0`` lands, registered the day before ``e1``:
    e0 to e3 hold the four slots and e4 is refused too. A fresh load of the final files agrees."""
    landing, warehouse = tmp_path / "landing", tmp_path / "nightly.duckdb"
    days = (*DAYS, "2026-10-04", "2026-10-05")
    for experiment in REGISTERED:
        day = DAYS[2] if experiment == "e5" else DAYS[0]
        _write(landing / "experiments" / day / f"{experiment}.jsonl",
               [dict(GOOD_EXPERIMENT, experiment_id=experiment, registered_at=f"{day}T0{experiment[1]}:00:00+00:00")])
    completion = landing / "experiment_events" / DAYS[1] / "done.jsonl"
    _write(completion, [{"schema_version": 1, "experiment_id": "e1", "status": "completed", "at": f"{DAYS[1]}T06:00:00+00:00"}])
    for index, day in enumerate(days[:3]):
        _land_day(landing, day, index)
        run_one_night(landing, warehouse, day)
    assert _admitted(warehouse) == {"e1": True, "e2": True, "e3": True, "e4": True, "e5": True}  # e5 in e1's slot

    completion.unlink()
    _land_day(landing, days[3], 3)
    run_one_night(landing, warehouse, days[3])
    assert _admitted(warehouse) == {"e1": True, "e2": True, "e3": True, "e4": True, "e5": False}

    _write(landing / "experiments" / "2026-09-30" / "e0.jsonl",
           [dict(GOOD_EXPERIMENT, experiment_id="e0", registered_at="2026-09-30T23:00:00+00:00")])
    _land_day(landing, days[4], 4)
    run_one_night(landing, warehouse, days[4])
    assert _admitted(warehouse) == {"e0": True, "e1": True, "e2": True, "e3": True, "e4": False, "e5": False}

    fresh_landing, fresh = tmp_path / "fresh" / "landing", tmp_path / "fresh" / "fresh.duckdb"
    shutil.copytree(landing, fresh_landing)
    run_one_night(fresh_landing, fresh, days[4])
    nightly_tables, fresh_tables = _comparable(warehouse), _comparable(fresh)
    assert {t: row_differences(nightly_tables[t], fresh_tables[t]) for t in fresh_tables
            if nightly_tables[t] != fresh_tables[t]} == {}
