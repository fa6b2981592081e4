"""Reopened, completed and stalled experiments through the nightly job, as a person reads them.

One landing, three experiments of one organization (50/50 designs, binary success):

* ``reo``: 60/40 for five days (a sample ratio mismatch: invalid), reopened at 10-06 00:00,
  then 50/50 with a true effect 0.3 -> 0.7. The new epoch counts only units first assigned
  after the reopen, and burn-in starts again: no decision the night of the reopen.
* ``done``: 50/50 with units every day to 10-15, completed at 10-10 12:00: its look of 10-10
  is the last, nothing after.
* ``quiet``: units from 10-01 to 10-04 only: stalled since 10-04, looked at on 10-11 (seven
  days on) and no more, with no days-left figure.

Every expected figure is counted here from the generated rows.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np

from tests.end_to_end.landing_files import land_jsonl
from tests.ingest.valid_records import VALID
from zcl_assets.runner import run_night

UTC = dt.timezone.utc
START = dt.datetime(2026, 10, 1, tzinfo=UTC)
REOPEN = dt.datetime(2026, 10, 6, tzinfo=UTC)


def _world(rng):
    """Per experiment, the generated sessions: (session id, arm, assigned_at, success)."""
    units = {}
    for eid, days, per_day in (("reo", range(0, 20), 100), ("done", range(0, 15), 60), ("quiet", range(0, 4), 60)):
        rows = []
        for day in days:
            at = START + dt.timedelta(days=day)
            control_share = 0.6 if eid == "reo" and at < REOPEN else 0.5
            for i in range(per_day):
                arm = "c" if rng.random() < control_share else "b"
                p = 0.3 if arm == "c" or not (eid == "reo" and at >= REOPEN) else 0.7
                assigned = at + dt.timedelta(seconds=int(rng.integers(60, 86_000)))
                rows.append((f"{eid}-{day}-{i}", arm, assigned, bool(rng.random() < p)))
        units[eid] = rows
    return units


def _write(landing, units):
    for eid in units:
        reg = {**VALID["experiments"], "experiment_id": eid, "guardrails": [], "metric_caps": {},
               "registered_at": START.isoformat(), "mde": 0.1, "baseline_mean": 0.3, "expected_verified_share": 1.0}
        land_jsonl(landing, "experiments", "2026-10-01", f"{eid}.jsonl", [reg])
    events = [{**VALID["experiment_events"], "experiment_id": "reo", "status": "reopened", "at": REOPEN.isoformat(),
               "reason": "allocation fixed", "allocation": None},
              {**VALID["experiment_events"], "experiment_id": "done", "status": "completed",
               "at": (START + dt.timedelta(days=9, hours=12)).isoformat(), "reason": "done", "allocation": None}]
    for event in events:
        land_jsonl(landing, "experiment_events", event["at"][:10], f"{event['experiment_id']}.jsonl", [event])
    by_day: dict[str, dict[str, list]] = {}
    for eid, rows in units.items():
        for sid, arm, at, success in rows:
            day = at.date().isoformat()
            tables = by_day.setdefault(day, {"sessions": [], "assignments": [], "outcomes": []})
            iso = at.isoformat()
            tables["sessions"].append({**VALID["sessions"], "session_id": sid, "experiment_id": eid, "delivered_arm": arm,
                                       "user_id": f"u-{sid}", "started_at": iso,
                                       "ended_at": (at + dt.timedelta(seconds=30)).isoformat()})
            tables["assignments"].append({**VALID["assignments"], "session_id": sid, "experiment_id": eid, "arm": arm,
                                          "unit_id": f"u-{sid}", "assigned_at": iso})
            tables["outcomes"].append({**VALID["outcomes"], "session_id": sid, "success": success,
                                       "recorded_at": (at + dt.timedelta(seconds=40)).isoformat()})
    for day, tables in by_day.items():
        for table, records in tables.items():
            land_jsonl(landing, table, day, "part.jsonl", records)


def test_reopened_completed_and_stalled_experiments(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    units = _world(np.random.default_rng(20))
    _write(landing, units)
    results = run_night(instance, "2026-10-20")
    assert results and all(r.success for r in results)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        looks = {(e, str(d)): dict(zip(cols, rest, strict=True)) for e, d, *rest in con.execute(
            "SELECT experiment_id, as_of, decision, decision_rule, decision_reason, epoch, CAST(epoch_start AS VARCHAR), "
            "n_control, n_treatment, days_to_plan, CAST(stalled_since AS VARCHAR), srm_fired "
            "FROM experiment_analysis WHERE is_primary ORDER BY 1, 2").fetchall()
            for cols in [("decision", "rule", "reason", "epoch", "epoch_start", "n_c", "n_t", "left", "stalled", "srm")]}
        records = con.execute("SELECT experiment_id, claim, CAST(look_as_of AS VARCHAR) FROM knowledge_records").fetchall()
        statuses = con.execute("SELECT experiment_id, status FROM staged_experiment_events ORDER BY 1").fetchall()
    assert statuses == [("done", "completed"), ("reo", "reopened")]

    def counted(eid, night, since=None):  # units first assigned by the end of the night (in the epoch)
        end = dt.datetime.combine(dt.date.fromisoformat(night), dt.time(), UTC) + dt.timedelta(days=1)
        rows = [r for r in units[eid] if r[2] < end and (since is None or r[2] >= since)]
        return sum(r[1] == "c" for r in rows), sum(r[1] == "b" for r in rows)

    # reo: invalid by the SRM in epoch 0; epoch 1 from the reopen, on its own units
    before = looks[("reo", "2026-10-05")]
    assert before["decision"] == "invalid" and before["srm"] and before["epoch"] == 0
    assert (before["n_c"], before["n_t"]) == counted("reo", "2026-10-05")
    night = looks[("reo", "2026-10-06")]
    assert (night["epoch"], night["epoch_start"]) == (1, "2026-10-06")
    assert (night["n_c"], night["n_t"]) == counted("reo", "2026-10-06", REOPEN)  # about 50 a side, not 300 + 50
    assert night["decision"] == "continue" and night["rule"] == 2 and "fewer than 7 days" in night["reason"]
    for day in range(6, 20):
        r = looks[("reo", f"2026-10-{day + 1:02d}")]
        assert r["epoch"] == 1 and (r["n_c"], r["n_t"]) == counted("reo", f"2026-10-{day + 1:02d}", REOPEN)
        assert "rests on epoch 1 (from 2026-10-06)" in r["reason"]
        # burn-in again: seven full days from the epoch's first assignment (10-06, after midnight)
        assert (r["rule"] == 2) == (day + 1 < 13)
    assert looks[("reo", "2026-10-20")]["decision"] == "adopt"
    assert not any(e == "reo" and d < "2026-10-13" and claim == "adopt" for e, claim, d in records)
    # done: the completed night is its last look, and no claim comes after it
    assert max(d for e, d in looks if e == "done") == "2026-10-10"
    assert all(d <= "2026-10-10" for e, _, d in records if e == "done")
    # quiet: stalled since its last unit, looked at once seven days on, no days left
    quiet = sorted(d for e, d in looks if e == "quiet")
    assert quiet[-1] == "2026-10-11" and quiet[-2] == "2026-10-04"
    last = looks[("quiet", "2026-10-11")]
    assert (last["stalled"], last["left"]) == ("2026-10-04", None)
    assert "stalled: no new units since 2026-10-04" in last["reason"]
    assert (last["n_c"], last["n_t"]) == counted("quiet", "2026-10-11")
