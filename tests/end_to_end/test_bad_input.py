"""Malformed input never crashes a run, never disappears: each bad row or file is quarantined
with the rule it broke, and raw = staged + quarantined for every landing table."""

import json

import duckdb
import polars as pl
import pytest

from tests.warehouse_checks import conservation_gaps
from zcl_assets.runner import run_night

DAY = "2026-10-02"
GOOD_EXPERIMENT = {
    "schema_version": 1, "experiment_id": "e1", "org_id": "o", "task_type": "t", "kind": "order",
    "hypothesis": "h", "control_arm": "control", "primary_metric": "success", "direction": "increase",
    "mde": 0.1, "alpha": 0.05, "power": 0.8, "baseline_mean": 0.5, "min_samples_per_arm": 10,
    "randomization_unit": "session", "registered_at": "2026-10-01T00:00:00+00:00",
    "arms": [{"name": "control", "payload": {}, "allocation": 0.5}, {"name": "treatment", "payload": {}, "allocation": 0.5}],
}


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")


def _assignment(session, arm="control", experiment="e1", at=f"{DAY}T10:00:00+00:00"):
    return {"schema_version": 1, "session_id": session, "experiment_id": experiment, "arm": arm, "unit_id": session, "assigned_at": at}


def _snapshot(**overrides):
    row = {"schema_version": 1, "experiment_id": "e1", "arm": "control", "metric": "success",
           "at": f"{DAY}T00:00:00+00:00", "n": 100, "mean": 0.5, "variance": 0.25}
    row.update(overrides)
    return row


@pytest.fixture
def landed(pipeline_paths):
    landing, warehouse = pipeline_paths
    write_bad_landing(landing)
    return landing, warehouse


def write_bad_landing(landing):
    """The landing of this module: good rows beside every kind of bad row and bad file."""
    bad_allocation = dict(GOOD_EXPERIMENT, experiment_id="e2", arms=[
        {"name": "control", "payload": {}, "allocation": 0.5}, {"name": "treatment", "payload": {}, "allocation": 0.4}])
    changed_mde = dict(GOOD_EXPERIMENT, mde=0.2, registered_at="2026-10-01T06:00:00+00:00")
    _write(landing / "experiments" / "2026-10-01" / "reg.jsonl", [GOOD_EXPERIMENT, bad_allocation, changed_mde])
    _write(landing / "assignments" / DAY / "a.jsonl", [
        _assignment("s1"),
        "[1, 2, 3]",                       # a JSON array, not an object
        "{not json",                       # malformed
        _assignment("s2", experiment="nope"),
        _assignment("s3", arm="blue"),
        _assignment("s4", at="yesterday"),
        _assignment("s1"),                 # duplicate (session, experiment)
        _assignment("s5", at="2026-10-05T00:00:00+00:00"),  # event time on another day
    ])
    _write(landing / "sessions" / DAY / "s.jsonl", [
        {"schema_version": 1, "session_id": "s1", "org_id": "o", "user_id": "u", "task_type": "t",
         "started_at": f"{DAY}T09:00:00+00:00", "ended_at": f"{DAY}T08:00:00+00:00", "experiment_id": "e1", "delivered_arm": "control"},
    ])
    _write(landing / "arm_snapshots" / DAY / "snap.jsonl", [
        _snapshot(), _snapshot(arm="treatment", n="abc"), _snapshot(arm="treatment", at=f"{DAY}T01:00:00+00:00", mean="NaN"),
        _snapshot(arm="treatment", at=f"{DAY}T02:00:00+00:00", variance=float("inf")),
    ])
    (landing / "outcomes" / DAY).mkdir(parents=True)
    (landing / "outcomes" / DAY / "empty.csv").write_text("")
    (landing / "outcomes" / DAY / "header_only.csv").write_text("schema_version,session_id\n")
    (landing / "outcomes" / DAY / "truncated.jsonl").write_text('{"schema_version": 1, "session_id": "s1", "succ\n')
    (landing / "assignments" / DAY / "broken.parquet").write_bytes(b"PAR1 this is not parquet")
    _write(landing / "assignments" / "2026-13-45" / "a.jsonl", [_assignment("s9")])
    (landing / "assignments" / DAY / "notes.txt").write_text("hello\n")
    pl.DataFrame([_assignment("s6", arm="treatment")]).write_parquet(landing / "assignments" / DAY / "good.parquet")


EXPECTED_RULES = {
    ("experiments", "bad_allocation"): 1,
    ("experiments", "duplicate_key"): 1,           # a changed registration is refused
    ("assignments", "malformed_record"): 2,
    ("assignments", "unknown_experiment"): 1,
    ("assignments", "arm_not_declared"): 1,
    ("assignments", "bad_type"): 1,
    ("assignments", "duplicate_key"): 1,
    ("assignments", "wrong_partition"): 1,
    ("assignments", "unreadable_file"): 1,
    ("assignments", "bad_landing_path"): 1,        # day folder 2026-13-45
    ("assignments", "unsupported_file_type"): 1,   # notes.txt
    ("sessions", "ended_after_started"): 1,
    ("arm_snapshots", "bad_type"): 2,              # n="abc", and mean="NaN": text is not a JSON number
    ("arm_snapshots", "not_finite"): 1,            # variance Infinity
    ("assignments", "no_session"): 2,              # s6 has none; s1's was quarantined (experience stage)
    ("outcomes", "malformed_record"): 1,           # a truncated line
}
"""(source table, rule): rows quarantined from :func:`write_bad_landing`, counted by hand."""


def test_bad_input_is_quarantined_with_its_rule(landed, instance):
    landing, warehouse = landed
    results = run_night(instance, "2026-10-03")
    assert results and all(r.success for r in results)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rules = {
            (t, r): n for t, r, n in con.execute("SELECT source_table, rule, count(*) FROM quarantine GROUP BY ALL").fetchall()
        }
        staged_assignments = sorted(r[0] for r in con.execute("SELECT session_id FROM staged_assignments").fetchall())
        assert conservation_gaps(con, ("experiments", "assignments", "sessions", "arm_snapshots", "outcomes")) == {}
    assert staged_assignments == ["s1", "s6"]
    assert rules == EXPECTED_RULES
    with duckdb.connect(str(warehouse), read_only=True) as con:
        (reason,) = con.execute("SELECT reason FROM quarantine WHERE source_table = 'outcomes'").fetchone()
        (moved,) = con.execute("SELECT reason FROM quarantine WHERE rule = 'wrong_partition'").fetchone()
    assert reason == "malformed_record: not a JSON object"  # no rule about fields it never had
    # s5 is assigned on 2026-10-05 but landed in the folder of DAY
    assert moved == "wrong_partition: assigned_at falls on 2026-10-05 UTC, not on the partition day 2026-10-02"


def test_json_nested_beyond_the_contracts_depth_is_quarantined_and_the_night_goes_on(pipeline_paths, instance):
    # a payload 1,000 levels deep once stopped staging (Python's JSON reader recursed), an
    # allocation 10,000 deep took DuckDB 2.3 GiB; both are written as text, too deep to dump
    landing, warehouse = pipeline_paths
    levels = lambda n: "[" * n + "]" * n  # noqa: E731
    deep_arms = json.dumps(dict(GOOD_EXPERIMENT, experiment_id="deep")).replace('"payload": {}', f'"payload": {levels(1_000)}', 1)
    _write(landing / "experiments" / "2026-10-01" / "reg.jsonl", [deep_arms, GOOD_EXPERIMENT])
    active = {"schema_version": 1, "experiment_id": "e1", "status": "active", "at": f"{DAY}T00:00:00+00:00"}
    deep_allocation = json.dumps(dict(active, at=f"{DAY}T05:00:00+00:00", allocation={"control": 0.5, "treatment": 0.5}))
    _write(landing / "experiment_events" / DAY / "ev.jsonl", [active, deep_allocation.replace("0.5}", levels(10_000) + "}")])
    _write(landing / "sessions" / DAY / "s.jsonl", [
        {"schema_version": 1, "session_id": "s1", "org_id": "o", "user_id": "u", "task_type": "t",
         "started_at": f"{DAY}T09:00:00+00:00", "experiment_id": "e1", "delivered_arm": "control"}])
    _write(landing / "assignments" / DAY / "a.jsonl", [_assignment("s1")])
    results = run_night(instance, "2026-10-03")
    assert results and all(r.success for r in results)
    assert any(e.asset_key.path[-1] == "analysis_report" for r in results for e in r.get_asset_materialization_events())
    with duckdb.connect(str(warehouse), read_only=True) as con:
        refused = con.execute("SELECT source_table, source_row, rule, reason FROM quarantine ORDER BY 1").fetchall()
        staged = [con.execute(f"SELECT count(*) FROM staged_{t}").fetchone()[0]
                  for t in ("experiments", "experiment_events", "sessions", "assignments")]
        assert conservation_gaps(con, ("experiments", "experiment_events", "sessions", "assignments")) == {}
    assert refused == [
        ("experiment_events", 2, "too_deep",
         "too_deep: allocation nests arrays and objects more than 32 levels deep, the most a JSON field may nest"),
        ("experiments", 1, "too_deep", "too_deep: arms nests arrays and objects more than 32 levels deep, the most a JSON field may nest"),
    ]
    assert staged == [1, 1, 1, 1]  # e1, its active event, its session and assignment
