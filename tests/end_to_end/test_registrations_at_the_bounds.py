"""A registration at every bound the contract declares goes through a whole night, report
included (contracts/tables.py): a plan that takes billions of days is reported as such."""

from __future__ import annotations

import datetime as dt

import duckdb

from contracts.tables import (
    DIRECTIONS,
    MAX_ARMS,
    MAX_GUARDRAILS,
    MAX_MAGNITUDE,
    MAX_MIN_SAMPLES,
    MAX_POWER,
    METRICS,
    MIN_ALPHA,
    MIN_STANDARDIZED_MDE,
    MIN_VERIFIED_SHARE,
)
from tests.end_to_end.landing_files import land_jsonl
from zcl_assets.runner import run_night

DAYS = ("2026-10-02", "2026-10-03")
AS_OF = "2026-10-04"
BASE = {"schema_version": 1, "task_type": "t", "kind": "other", "hypothesis": "h", "primary_metric": "success",
        "direction": "increase", "mde": 0.1, "alpha": 0.05, "power": 0.8, "baseline_mean": 0.5, "min_samples_per_arm": 10,
        "randomization_unit": "session", "control_arm": "control", "registered_at": "2026-10-01T00:00:00+00:00"}
FINEST = {"mde": MIN_STANDARDIZED_MDE * 0.5, "alpha": MIN_ALPHA, "power": MAX_POWER,  # 1e-4 sd of a rate of 0.5
          "expected_verified_share": MIN_VERIFIED_SHARE}
RAILS = [{"metric": m, "direction": d, "margin": 1 if m == "success" else MAX_MAGNITUDE} for m in METRICS for d in DIRECTIONS]
assert len(RAILS) == MAX_GUARDRAILS  # 4 metrics x 2 directions, each at its largest margin


def _arms(n: int) -> list[dict]:
    return [{"name": "control" if i == 0 else f"t{i}", "payload": {}, "allocation": 1 / n} for i in range(n)]


# four in one family hold its four alpha slots, so its outlook looks for the next free slot
REGISTRATIONS = {
    "min-samples": ("far", {"min_samples_per_arm": MAX_MIN_SAMPLES}),
    "finest": ("far", {**FINEST, "min_samples_per_arm": MAX_MIN_SAMPLES}),
    "widest": ("far", {**FINEST, "arms": _arms(MAX_ARMS), "guardrails": RAILS}),
    "finest-score": ("far", {**FINEST, "primary_metric": "score", "baseline_mean": -MAX_MAGNITUDE, "baseline_sd": MAX_MAGNITUDE,
                             "mde": MIN_STANDARDIZED_MDE * MAX_MAGNITUDE, "randomization_unit": "user"}),
    "largest": ("large", {"primary_metric": "tokens", "direction": "decrease", "baseline_mean": MAX_MAGNITUDE,
                          "baseline_sd": MAX_MAGNITUDE, "mde": MAX_MAGNITUDE, "guardrails": RAILS,
                          "metric_caps": {"tokens": MAX_MAGNITUDE, "time_minutes": MAX_MAGNITUDE}}),
    "loosest": ("loose", {"mde": 1.0, "baseline_mean": 0.0, "alpha": 0.5, "power": 0.5, "min_samples_per_arm": 1}),
}


def _land(landing) -> None:
    registrations = [{**BASE, "arms": _arms(2), "experiment_id": f"e-{name}", "org_id": f"o-{org}", **fields}
                     for name, (org, fields) in REGISTRATIONS.items()]
    land_jsonl(landing, "experiments", "2026-10-01", "reg.jsonl", registrations)
    k = 0
    for day in DAYS:
        sessions, assignments, outcomes = [], [], []
        for r in registrations:
            arms = [a["name"] for a in r["arms"]]
            for i in range(max(8, len(arms))):  # 4 units an arm a day for two arms, one for each of 32
                k += 1
                at = f"{day}T{i % 20:02d}:"
                unit = f"u{k % 50}" if r["randomization_unit"] == "user" else f"s{k}"
                sessions.append({"schema_version": 1, "session_id": f"s{k}", "org_id": r["org_id"], "user_id": f"u{k % 50}",
                                 "task_type": "t", "started_at": at + "10:00+00:00", "experiment_id": r["experiment_id"],
                                 "delivered_arm": arms[i % len(arms)]})
                assignments.append({"schema_version": 1, "session_id": f"s{k}", "experiment_id": r["experiment_id"],
                                    "arm": arms[i % len(arms)], "unit_id": unit, "assigned_at": at + "09:00+00:00"})
                outcomes.append({"schema_version": 1, "session_id": f"s{k}", "success": k % 3 == 0, "time_minutes": 10.0,
                                 "tokens": 1000.0 + k % 11, "score": k % 5 - 2.0, "recorded_at": at + "40:00+00:00",
                                 "evaluator_id": "ev", "evaluator_version": "1", "evaluator_kind": "evaluator"})
        land_jsonl(landing, "sessions", day, "s.jsonl", sessions)
        land_jsonl(landing, "assignments", day, "a.jsonl", assignments)
        land_jsonl(landing, "outcomes", day, "o.jsonl", outcomes)


def test_registrations_at_every_declared_bound_go_through_a_night_and_its_report(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    _land(landing)
    results = run_night(instance, AS_OF)
    assert results and all(r.success for r in results)
    assert (warehouse.parent / "reports" / f"look-{AS_OF}.html").exists()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        refused = con.execute("SELECT rule, reason FROM quarantine WHERE source_table = 'experiments'").fetchall()
        plans = dict(con.execute("SELECT experiment_id, admitted FROM experiment_plans").fetchall())
        planned, left = con.execute("SELECT planned_n_per_arm, days_to_plan FROM experiment_analysis "
                                    "WHERE experiment_id = 'e-min-samples' AND is_primary AND as_of = ?", [AS_OF]).fetchone()
        outlook = con.execute("SELECT slot_free, next_free_slot FROM family_outlook WHERE org_id = 'o-far'").fetchone()
    assert refused == [] and plans == {f"e-{name}": True for name in REGISTRATIONS}
    # the declared minimum, 1e9 units an arm, is far above what power asks (3,480 at MDE 0.1): at
    # 8 units an arm over 3 days (< 2.7 a day) the rest takes more than (1e9 - 8) / 2.7 = 3.7e8
    # days, an end long after 9999-12-31 (2.9e6 days on), which no date holds: no slot's end is known
    assert planned == MAX_MIN_SAMPLES and left > 3.7e8
    assert left > (dt.date(9999, 12, 31) - dt.date.fromisoformat(AS_OF)).days
    assert outlook == (False, None)
