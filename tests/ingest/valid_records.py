"""One valid landing record per table, on the day 2026-10-02, referencing each other."""

DAY = "2026-10-02"
AT = f"{DAY}T10:00:00+00:00"

VALID: dict[str, dict] = {
    "experiments": {
        "schema_version": 1, "experiment_id": "e1", "org_id": "o", "task_type": "t", "kind": "order", "hypothesis": "h",
        "arms": [{"name": "c", "payload": {}, "allocation": 0.5}, {"name": "b", "payload": {"docs": ["d"]}, "allocation": 0.5}],
        "control_arm": "c", "primary_metric": "success", "direction": "increase", "mde": 0.1, "alpha": 0.05,
        "power": 0.8, "baseline_mean": 0.5, "baseline_sd": 0.5, "min_samples_per_arm": 10, "randomization_unit": "session",
        "sessions_per_unit": "many", "guardrails": [{"metric": "tokens", "direction": "decrease", "margin": 100}],
        "metric_caps": {"tokens": 5000}, "expected_verified_share": 0.9, "registered_at": f"{DAY}T00:00:00+00:00",
    },
    "experiment_events": {"schema_version": 1, "experiment_id": "e1", "status": "active", "at": AT, "reason": "go",
                          "allocation": {"c": 0.5, "b": 0.5}},
    "sessions": {
        "schema_version": 1, "session_id": "s1", "org_id": "o", "user_id": "u", "task_type": "t", "model": "m",
        "budget": 1000.0, "started_at": AT, "ended_at": f"{DAY}T10:30:00+00:00", "context_doc_ids": ["d1", "d2"],
        "context_digest": "x", "experiment_id": "e1", "delivered_arm": "c", "admission_id": "a1",
    },
    "assignments": {"schema_version": 1, "session_id": "s1", "experiment_id": "e1", "arm": "c", "unit_id": "u", "assigned_at": AT},
    "outcomes": {
        "schema_version": 1, "session_id": "s1", "success": True, "time_minutes": 12.5, "tokens": 900.0, "score": 0.7,
        "recorded_at": f"{DAY}T11:00:00+00:00", "evaluator_id": "ev", "evaluator_version": "1", "evaluator_kind": "evaluator",
    },
    "admission_events": {
        "schema_version": 1, "admission_id": "a1", "org_id": "o", "task_type": "t", "state": "admitted", "at": AT,
        "arm": "b", "session_id": "s1", "outcome": "productive",
    },
    "arm_snapshots": {"schema_version": 1, "experiment_id": "e1", "arm": "c", "metric": "success", "at": AT,
                      "n": 100, "mean": 0.5, "variance": 0.25},
}
