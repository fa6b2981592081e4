"""Cross-row rules at their boundaries: the instant itself is allowed, a second before is not.

Each row of the fixture sits on one side of a rule's inequality, so a rule whose ``<`` became
``<=``, or that compares with the wrong row of a session, quarantines the wrong row.
"""

from __future__ import annotations

import json

import dagster as dg
import duckdb
import pytest

from zcl_assets.runner import run_night

DAY = "2026-10-02"
REGISTERED = f"{DAY}T08:00:00+00:00"


def _experiment(experiment_id: str) -> dict:
    return {
        "schema_version": 1, "experiment_id": experiment_id, "org_id": "o", "task_type": f"t-{experiment_id}",
        "kind": "order", "hypothesis": "h", "control_arm": "a", "primary_metric": "success", "direction": "increase",
        "mde": 0.1, "alpha": 0.05, "power": 0.8, "baseline_mean": 0.5, "min_samples_per_arm": 10,
        "randomization_unit": "session", "registered_at": REGISTERED,
        "arms": [{"name": "a", "payload": {}, "allocation": 0.5}, {"name": "b", "payload": {}, "allocation": 0.5}],
    }


def _assignment(session: str, at: str, experiment: str = "e1") -> dict:
    return {"schema_version": 1, "session_id": session, "experiment_id": experiment, "arm": "a", "unit_id": session,
            "assigned_at": f"{DAY}T{at}+00:00"}


def _session(session: str) -> dict:
    return {"schema_version": 1, "session_id": session, "org_id": "o", "user_id": session, "task_type": "t-e1",
            "started_at": f"{DAY}T08:00:00+00:00", "experiment_id": "e1", "delivered_arm": "a"}


def _outcome(session: str, at: str) -> dict:
    return {"schema_version": 1, "session_id": session, "success": True, "recorded_at": f"{DAY}T{at}+00:00",
            "evaluator_id": "ev", "evaluator_version": "1", "evaluator_kind": "evaluator"}


def _write(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def quarantined(tmp_path_factory):
    root = tmp_path_factory.mktemp("boundaries")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    _write(landing / "experiments" / DAY / "e.jsonl", [_experiment("e1"), _experiment("e2")])
    _write(landing / "sessions" / DAY / "s.jsonl", [_session(s) for s in ("at_registration", "before_registration",
                                                                           "at_assignment", "before_assignment", "two")])
    _write(landing / "assignments" / DAY / "a.jsonl", [
        _assignment("at_registration", "08:00:00"),        # at the registration instant: staged
        _assignment("before_registration", "07:59:59"),    # a second before it: quarantined
        _assignment("at_assignment", "09:00:00"),
        _assignment("before_assignment", "09:00:00"),
        _assignment("two", "10:00:00"),                    # first assignment of session "two"
        _assignment("two", "12:00:00", experiment="e2"),   # a later one, in another experiment
    ])
    _write(landing / "outcomes" / DAY / "o.jsonl", [
        _outcome("at_assignment", "09:00:00"),       # at the assignment instant: staged
        _outcome("before_assignment", "08:59:59"),   # a second before it: quarantined
        _outcome("two", "11:00:00"),                 # after the first assignment, before the second: staged
    ])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZCL_LANDING_DIR", str(landing))
        mp.setenv("ZCL_WAREHOUSE", str(warehouse))
        with dg.DagsterInstance.ephemeral() as instance:
            results = run_night(instance, DAY)
        assert results and all(r.success for r in results)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("SELECT source_table, rule, json_extract_string(record, '$.session_id') FROM quarantine "
                           "WHERE stage = 'contract' ORDER BY ALL").fetchall()
    return rows


def test_an_assignment_at_the_registration_instant_is_staged(quarantined):
    assignments = [(rule, s) for table, rule, s in quarantined if table == "assignments"]
    assert assignments == [("assigned_before_registration", "before_registration")]


def test_an_outcome_is_checked_against_the_first_assignment_of_its_session(quarantined):
    outcomes = [(rule, s) for table, rule, s in quarantined if table == "outcomes"]
    assert outcomes == [("outcome_before_assignment", "before_assignment")]
