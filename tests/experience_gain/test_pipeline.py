"""Simulated memory-on/off runs through the nightly job: the gain, its interval and the claim level
for a true gain, for none, and for tasks still short of their minimum sample."""

import json

import duckdb
import numpy as np
import pytest
from scipy import stats

from tests.warehouse_checks import run_one_night
from zcl_assets.simulation.memory_runs import simulate_memory_runs

# Four tasks of 200 runs per arm: a task's gain has a standard error near 0.02, and the HKSJ
# interval over 4 tasks uses t with 3 df (3.18), so a true gain of 0.10 is claimed with room.
TRUE_GAIN = {"routing": 0.10, "summarize": 0.10, "codegen": 0.10, "triage": 0.10}
NO_GAIN = {"routing": 0.0, "summarize": 0.0, "codegen": 0.0, "triage": 0.0}


@pytest.fixture(scope="module")
def memory_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    gainful = simulate_memory_runs(landing, seed=11, org_id="gainful", tasks=TRUE_GAIN, runs_per_arm=200)
    flat = simulate_memory_runs(landing, seed=12, org_id="flat", tasks=NO_GAIN, runs_per_arm=200)
    young = simulate_memory_runs(landing, seed=13, org_id="young", tasks={"routing": 0.1, "codegen": 0.1},
                                 runs_per_arm=30)
    run_one_night(landing, warehouse, "2026-09-20")
    return warehouse, landing, {"gainful": gainful, "flat": flat, "young": young}


def _pooled(warehouse, org):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        cur = con.execute("SELECT * FROM experience_gain WHERE org_id = ?", [org])
        names = [d[0] for d in cur.description]
        return dict(zip(names, cur.fetchone(), strict=True))


def _landed_scores(landing, experiment_id):
    """Scores per arm read back from the landed JSON files (independent of the warehouse)."""
    arms = {}
    for path in (landing / "assignments").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            a = json.loads(line)
            if a["experiment_id"] == experiment_id:
                arms[a["session_id"]] = a["arm"]
    scores = {"recall_on": [], "recall_off": []}
    for path in (landing / "outcomes").rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            o = json.loads(line)
            if o["session_id"] in arms:
                scores[arms[o["session_id"]]].append(o["score"])
    return np.array(scores["recall_on"]), np.array(scores["recall_off"])


def test_per_task_gain_is_welch_on_the_landed_scores(memory_runs):
    warehouse, landing, _ = memory_runs
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT experiment_id, gain, ci_low, ci_high, n_on, n_off, status FROM experience_gain_by_task "
            "WHERE org_id = 'gainful' ORDER BY experiment_id"
        ).fetchall()
    assert len(rows) == 4
    for experiment_id, gain, low, high, n_on, n_off, status in rows:
        on, off = _landed_scores(landing, experiment_id)
        ref = stats.ttest_ind(on, off, equal_var=False)
        ci = ref.confidence_interval(0.95)
        assert (n_on, n_off, status) == (200, 200, "pooled")
        assert gain == pytest.approx(on.mean() - off.mean(), abs=1e-9)
        assert (low, high) == (pytest.approx(ci.low, abs=1e-9), pytest.approx(ci.high, abs=1e-9))


def _decisions(warehouse, org):
    """The latest primary decision of each of the organization's experiments."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return [d for (d,) in con.execute(
            "SELECT arg_max(decision, as_of) FROM experiment_analysis WHERE is_primary AND org_id = ? "
            "GROUP BY experiment_id ORDER BY experiment_id", [org]).fetchall()]


def _expected_claim(warehouse, org):
    """A gain above zero is claimed only where every pooled task's experiment decided adopt."""
    return "positive" if all(d == "adopt" for d in _decisions(warehouse, org)) else "none"


def test_a_true_gain_is_covered_and_claimed_where_the_experiments_decided(memory_runs):
    pooled = _pooled(memory_runs[0], "gainful")
    assert pooled["ci_low"] > 0 and pooled["ci_low"] < 0.10 < pooled["ci_high"]
    assert (pooled["tasks"], pooled["task_types"]) == (4, 4)
    decisions = _decisions(memory_runs[0], "gainful")
    assert len(decisions) == 4 and pooled["claim_level"] == _expected_claim(memory_runs[0], "gainful")
    if pooled["claim_level"] == "positive":
        assert pooled["reason"].startswith("recall raised the primary metric by")
    else:
        undecided = sum(d != "adopt" for d in decisions)
        assert pooled["reason"].startswith("descriptive only: the 95% HKSJ interval")
        assert f"{undecided} of 4 pooled tasks' experiments have not decided adopt" in pooled["reason"]


def test_no_gain_gives_no_claim(memory_runs):
    pooled = _pooled(memory_runs[0], "flat")
    assert pooled["claim_level"] == "none"
    assert pooled["ci_low"] < 0 < pooled["ci_high"]
    assert "contains zero" in pooled["reason"]


def test_tasks_short_of_their_minimum_sample_make_no_claim(memory_runs):
    warehouse = memory_runs[0]
    pooled = _pooled(warehouse, "young")
    assert (pooled["claim_level"], pooled["tasks"], pooled["tasks_collecting"]) == ("none", 0, 2)
    assert pooled["reason"] == ("0 task types with repeated runs at the registered minimum sample per arm; a claim needs 2; "
                                "2 more tasks still collecting")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        statuses = con.execute("SELECT DISTINCT status, reason FROM experience_gain_by_task WHERE org_id = 'young'").fetchall()
    assert statuses == [("collecting", "30 on / 30 off of the registered minimum 100 per arm")]


def test_the_report_carries_the_gain(memory_runs):
    from zcl_assets.reports.funnel import funnel_section, render_funnel_section

    with duckdb.connect(str(memory_runs[0]), read_only=True) as con:
        section = funnel_section(con)
    levels = {g["org_id"]: g["claim_level"] for g in section["experience_gain"]}
    gainful = _expected_claim(memory_runs[0], "gainful")
    assert levels == {"flat": "none", "gainful": gainful, "young": "none"}
    assert f"claim level {gainful}" in render_funnel_section(section)
