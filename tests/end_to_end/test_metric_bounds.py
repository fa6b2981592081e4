"""An outcome's metric beyond its declared bound (``contracts.tables.MAX_METRIC_VALUE``) is
quarantined, and values at the bound go through the look's exact sums: one landed value never
stops the look of every experiment. Before the bounds, a score of 2e7 overflowed the 128-bit
sums of squares and no experiment was analysed."""

import duckdb

from contracts.tables import MAX_METRIC_VALUE
from tests.end_to_end.test_bad_input import GOOD_EXPERIMENT, _assignment, _write
from tests.warehouse_checks import conservation_gaps, run_one_night
from zcl_assets.analysis.metrics import CATALOGUE, MEAN_SCALE

DAY = "2026-10-02"
SCORED = dict(GOOD_EXPERIMENT, experiment_id="scored", primary_metric="score", baseline_mean=0.0, baseline_sd=1.0, mde=0.5)
COUNTED = dict(GOOD_EXPERIMENT, experiment_id="counted", org_id="o2", task_type="t2")
SCORES = {"s1": 1000.0, "s2": -1000.0, "s3": 2e7, "s4": 1000.0}  # s1, s3 control; s2, s4 treatment


def _session(session, experiment, arm):
    return {"schema_version": 1, "session_id": session, "org_id": "o" if experiment == "scored" else "o2",
            "user_id": f"u-{session}", "task_type": "t" if experiment == "scored" else "t2",
            "started_at": f"{DAY}T09:00:00+00:00", "experiment_id": experiment, "delivered_arm": arm}


def _outcome(session, **metric):
    return {"schema_version": 1, "session_id": session, "recorded_at": f"{DAY}T11:00:00+00:00",
            "evaluator_id": "grader", "evaluator_version": "1", "evaluator_kind": "evaluator", **metric}


def test_a_metric_beyond_its_bound_is_quarantined_and_every_experiment_is_analysed(pipeline_paths):
    landing, warehouse = pipeline_paths
    arms = {s: ("control", "treatment")[i % 2] for i, s in enumerate(SCORES)}
    counted = {f"g{i}": ("control", "treatment")[i % 2] for i in range(4)}
    _write(landing / "experiments" / "2026-10-01" / "reg.jsonl", [SCORED, COUNTED])
    _write(landing / "sessions" / DAY / "s.jsonl", [_session(s, "scored", a) for s, a in arms.items()]
           + [_session(s, "counted", a) for s, a in counted.items()])
    _write(landing / "assignments" / DAY / "a.jsonl", [_assignment(s, a, "scored") for s, a in arms.items()]
           + [_assignment(s, a, "counted") for s, a in counted.items()])
    _write(landing / "outcomes" / DAY / "o.jsonl", [_outcome(s, score=v) for s, v in SCORES.items()]
           + [_outcome(s, success=i < 3) for i, s in enumerate(counted)])
    run_one_night(landing, warehouse, DAY)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert not conservation_gaps(con)
        refused = con.execute("SELECT rule, reason FROM quarantine WHERE source_table = 'outcomes'").fetchall()
        looks = dict(con.execute(
            "SELECT experiment_id, (n_control, n_treatment, mean_control, mean_treatment) FROM experiment_analysis "
            "WHERE as_of = $day AND is_primary", {"day": DAY}).fetchall())
    assert [rule for rule, _ in refused] == ["out_of_range"]
    assert "score=" in refused[0][1] and "must be <= 1000" in refused[0][1]
    # control: s1 alone (s3 refused), mean 1000; treatment: s2 and s4, mean (-1000 + 1000) / 2 = 0
    assert looks["scored"] == (1, 2, 1000.0, 0.0)
    # counted: g0, g2 control (successes 1, 1), g1, g3 treatment (1, 0)
    assert looks["counted"] == (2, 2, 1.0, 0.5)


def test_the_exact_sums_hold_every_metric_at_its_bound():
    """At its bound a unit's mean is ``bound / resolution * MEAN_SCALE`` steps: the squares of
    5 * 10**7 such units must stay below 2**127 (DuckDB's HUGEINT) and 10**38 (Spark's DECIMAL(38, 0))."""
    for metric, bound in MAX_METRIC_VALUE.items():
        steps = round(bound / CATALOGUE[metric].resolution) * MEAN_SCALE
        assert 5 * 10**7 * steps**2 < min(2**127, 10**38), metric
        assert 5 * 10**7 * (10 * steps) ** 2 > 2**127, metric  # and the bound is not ten times too tight
