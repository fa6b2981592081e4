"""A declared allocation change and a guardrail that never varies, through the nightly job.

One landing, two experiments of one organization (binary success), one night as of 10-20:

* ``shift``: registered 90/10, then 50/50 from 10-11 00:00 (a declared allocation change);
  success 0.2 in both arms before the change and 0.6 in both after: no effect. Pooled over
  the periods the treatment arm, drawn mostly from the later period, looks far better (Simpson);
  the stratified difference and its relative lift do not.
* ``flat``: 50/50, success 0.3 against 0.7, with a tokens guardrail (decrease, margin 500)
  whose value is exactly 15,000 in every session of both arms: zero variance, no interval,
  but equal arms, so the guardrail is non-inferior and lets the adopt through.

Every expected figure is counted here from the generated rows.
"""

from __future__ import annotations

import datetime as dt
import math

import duckdb
import numpy as np
import pytest
from scipy import stats

from tests.end_to_end.landing_files import land_jsonl
from tests.ingest.valid_records import VALID
from zcl_assets.runner import run_night

UTC = dt.timezone.utc
START = dt.datetime(2026, 10, 1, tzinfo=UTC)
CHANGE = dt.datetime(2026, 10, 11, tzinfo=UTC)
NIGHT = "2026-10-20"


def _units(rng):
    """Per experiment, the generated sessions: (session id, arm, assigned_at, success)."""
    units = {"shift": [], "flat": []}
    for day in range(20):
        at = START + dt.timedelta(days=day)
        for i in range(100):
            assigned = at + dt.timedelta(seconds=int(rng.integers(60, 86_000)))
            arm = "c" if rng.random() < (0.9 if at < CHANGE else 0.5) else "b"
            units["shift"].append((f"shift-{day}-{i}", arm, assigned, bool(rng.random() < (0.2 if at < CHANGE else 0.6))))
            arm = "c" if rng.random() < 0.5 else "b"
            units["flat"].append((f"flat-{day}-{i}", arm, assigned, bool(rng.random() < (0.3 if arm == "c" else 0.7))))
    return units


def _write(landing, units):
    guard = [{"metric": "tokens", "direction": "decrease", "margin": 500}]
    for eid, shares, guardrails in (("shift", (0.9, 0.1), []), ("flat", (0.5, 0.5), guard)):
        arms = [{"name": "c", "payload": {}, "allocation": shares[0]}, {"name": "b", "payload": {}, "allocation": shares[1]}]
        reg = {**VALID["experiments"], "experiment_id": eid, "arms": arms, "guardrails": guardrails, "metric_caps": {},
               "registered_at": START.isoformat(), "mde": 0.1, "baseline_mean": 0.3, "expected_verified_share": 1.0}
        land_jsonl(landing, "experiments", "2026-10-01", f"{eid}.jsonl", [reg])
    change = {**VALID["experiment_events"], "experiment_id": "shift", "status": "active", "at": CHANGE.isoformat(),
              "reason": "rebalanced", "allocation": {"c": 0.5, "b": 0.5}}
    land_jsonl(landing, "experiment_events", "2026-10-11", "shift.jsonl", [change])
    by_day: dict[str, dict[str, list]] = {}
    for eid, rows in units.items():
        for sid, arm, at, success in rows:
            tables = by_day.setdefault(at.date().isoformat(), {"sessions": [], "assignments": [], "outcomes": []})
            tables["sessions"].append({**VALID["sessions"], "session_id": sid, "experiment_id": eid, "delivered_arm": arm,
                                       "user_id": f"u-{sid}", "started_at": at.isoformat(),
                                       "ended_at": (at + dt.timedelta(seconds=30)).isoformat()})
            tables["assignments"].append({**VALID["assignments"], "session_id": sid, "experiment_id": eid, "arm": arm,
                                          "unit_id": f"u-{sid}", "assigned_at": at.isoformat()})
            tables["outcomes"].append({**VALID["outcomes"], "session_id": sid, "success": success, "tokens": 15000.0,
                                       "recorded_at": (at + dt.timedelta(seconds=40)).isoformat()})
    for day, tables in by_day.items():
        for table, records in tables.items():
            land_jsonl(landing, table, day, "part.jsonl", records)


def _stratified(rows):
    """The stratified estimate by hand (Cochran 1977; strata weighted by their units, w_s = n_s / n):
    each arm's stratified mean and squared standard error (p (1 - p) / n per stratum), the
    difference, and the relative lift with its log-scale delta-method 95% interval (Deng, Lu and
    Litz 2018)."""
    strata = [[r for r in rows if (r[2] >= CHANGE) == later] for later in (False, True)]
    total = sum(len(s) for s in strata)
    mean = {"b": 0.0, "c": 0.0}
    se2 = {"b": 0.0, "c": 0.0}
    for stratum in strata:
        w = len(stratum) / total
        for arm in mean:
            values = [r[3] for r in stratum if r[1] == arm]
            p = sum(values) / len(values)
            mean[arm] += w * p
            se2[arm] += w**2 * p * (1 - p) / len(values)
    half = stats.norm.isf(0.025) * math.sqrt(se2["b"] / mean["b"] ** 2 + se2["c"] / mean["c"] ** 2)
    ratio = mean["b"] / mean["c"]
    return mean["b"] - mean["c"], ratio - 1, math.exp(math.log(ratio) - half) - 1, math.exp(math.log(ratio) + half) - 1


def test_an_allocation_change_is_stratified_in_the_lift_and_a_flat_guardrail_lets_adopt_through(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    units = _units(np.random.default_rng(23))
    _write(landing, units)
    results = run_night(instance, NIGHT)
    assert results and all(r.success for r in results)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        shift = con.execute(
            "SELECT periods, allocation, difference, relative_lift, lift_ci_low, lift_ci_high, srm_fired, n_control, "
            "n_treatment FROM experiment_analysis WHERE experiment_id = 'shift' AND is_primary AND as_of = ?",
            [NIGHT]).fetchone()
        flat = {role: row for role, *row in con.execute(
            "SELECT role, decision, guardrail_status, guardrail_verdict, difference, mean_control, mean_treatment, cs_low "
            "FROM experiment_analysis WHERE experiment_id = 'flat' AND as_of = ?", [NIGHT]).fetchall()}
    periods, allocation, difference, lift, low, high, srm, n_c, n_t = shift
    rows = units["shift"]
    assert (periods, allocation, srm) == (2, "declared, changed", False)
    assert (n_c, n_t) == (sum(r[1] == "c" for r in rows), sum(r[1] == "b" for r in rows))
    expected = _stratified(rows)
    assert (difference, lift, low, high) == tuple(pytest.approx(v, rel=1e-9, abs=1e-12) for v in expected)
    pooled = {arm: np.mean([r[3] for r in rows if r[1] == arm]) for arm in "bc"}
    assert pooled["b"] / pooled["c"] - 1 > 0.3  # what a pooled lift would read: the later period's better rate
    assert abs(lift) < 0.15 and low < 0 < high
    # flat: the guardrail's arms are both exactly 15,000 tokens
    decision, status, _, _, _, _, _ = flat["primary"]
    _, _, verdict, g_difference, g_control, g_treatment, g_cs_low = flat["guardrail"]
    assert (g_control, g_treatment, g_difference, g_cs_low) == (15000.0, 15000.0, 0.0, None)
    assert verdict == "non-inferior"
    assert status == "tokens non-inferior: both arms constant and equal"
    assert decision == "adopt"
