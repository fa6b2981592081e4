"""Tests of the session simulator: determinism, layout, dirty rows and recoverable truth."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from zcl_assets.simulation import DIRTY_KINDS, simulate_sessions

TABLES = ("experiments", "experiment_events", "sessions", "assignments", "outcomes",
          "admission_events")
COLUMNS = {
    "sessions": {"session_id": "VARCHAR", "org_id": "VARCHAR", "user_id": "VARCHAR",
                 "task_type": "VARCHAR", "started_at": "VARCHAR", "context_digest": "VARCHAR",
                 "experiment_id": "VARCHAR", "delivered_arm": "VARCHAR",
                 "admission_id": "VARCHAR"},
    "assignments": {"session_id": "VARCHAR", "experiment_id": "VARCHAR", "arm": "VARCHAR",
                    "unit_id": "VARCHAR", "assigned_at": "VARCHAR"},
    "outcomes": {"session_id": "VARCHAR", "success": "BOOLEAN", "time_minutes": "DOUBLE",
                 "tokens": "DOUBLE", "score": "DOUBLE", "recorded_at": "VARCHAR",
                 "evaluator_kind": "VARCHAR"},
    "admission_events": {"admission_id": "VARCHAR", "state": "VARCHAR", "at": "VARCHAR",
                         "session_id": "VARCHAR", "outcome": "VARCHAR"},
}


def lines(landing: Path, table: str) -> list[str]:
    out = []
    for f in sorted((landing / table).glob("*/*.jsonl")):
        out.extend(f.read_text(encoding="utf-8").splitlines())
    return out


def records(landing: Path, table: str) -> list[dict]:
    out = []
    for line in lines(landing, table):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def rel(landing: Path, table: str) -> str:
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS[table].items())
    return (f"read_json('{landing / table / '*' / '*.jsonl'}', format='newline_delimited', "
            f"ignore_errors=true, columns={{{cols}}})")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    landing = tmp_path_factory.mktemp("sim")
    return landing, simulate_sessions(landing)


def test_deterministic_for_a_seed(tmp_path, sim):
    landing, summary = sim
    again = simulate_sessions(tmp_path / "again")
    files_a = sorted(p.relative_to(landing) for p in landing.rglob("*.jsonl"))
    files_b = sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*.jsonl"))
    assert files_a == files_b
    for rel_path in files_a:
        assert (landing / rel_path).read_bytes() == (tmp_path / "again" / rel_path).read_bytes()
    assert again.records_written == summary.records_written
    other = simulate_sessions(tmp_path / "other", seed=7, days=5)
    assert other.records_written["sessions"] < summary.records_written["sessions"]
    assert (tmp_path / "other" / "sessions" / "2026-10-01" / "simulation-7.jsonl").read_bytes() != \
        (landing / "sessions" / "2026-10-01" / "simulation-20261129.jsonl").read_bytes()


def test_layout_and_counts(sim):
    landing, s = sim
    assert sorted(p.name for p in landing.iterdir()) == sorted(TABLES)
    for table in TABLES:
        days = sorted(p.name for p in (landing / table).iterdir())
        assert days[0] >= "2026-10-01" and days[-1] <= "2026-11-15", table
        assert all(f.name == "simulation-20261129.jsonl" for f in (landing / table).glob("*/*"))
        assert len(lines(landing, table)) == s.records_written[table], table
    assert len(list((landing / "sessions").iterdir())) == 45
    assert sum(s.records_written.values()) < 200_000
    assert s.records_written["experiments"] == 8 == len(s.experiments)
    # every record is stamped with the schema version and sits in its UTC day's folder
    for table, tcol in (("sessions", "started_at"), ("outcomes", "recorded_at"),
                        ("assignments", "assigned_at"), ("admission_events", "at")):
        for f in (landing / table).glob("*/*.jsonl"):
            for line in f.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                assert rec["schema_version"] == 1
                if tcol in rec and rec[tcol][:4] == "2026" and "?" not in rec[tcol]:
                    assert rec[tcol][:10] == f.parent.name
    # organizations, task types, sessions outside experiments
    sessions = records(landing, "sessions")
    tasks = Counter((r["org_id"], r["task_type"]) for r in sessions)
    orgs = Counter(o for o, _ in tasks)
    assert len(orgs) == 3 and all(2 <= n <= 3 for n in orgs.values())
    outside = sum(r["experiment_id"] is None for r in sessions)
    assert 0.10 < outside / len(sessions) < 0.25
    extra = sum(r["session_id"].startswith("ses-dirty") for r in sessions)
    assert extra == 5  # unparseable ts, unknown arm, early outcome, 2 mismatches
    assert s.sessions_outside_experiments + s.sessions_in_experiments + extra == len(sessions)


def test_registrations_precede_assignments_and_digest_constant(sim):
    landing, s = sim
    regs = {r["experiment_id"]: r for r in records(landing, "experiments")}
    events = records(landing, "experiment_events")
    assert {e["experiment_id"] for e in events} == set(regs)
    assert all(e["status"] == "active" and e["at"] == regs[e["experiment_id"]]["registered_at"]
               for e in events)
    con = duckdb.connect()
    first = dict(con.sql(
        f"select experiment_id, min(cast(assigned_at as timestamptz)) from {rel(landing, 'assignments')} group by 1"
    ).fetchall())
    for eid, reg in regs.items():
        reg_at = con.sql(f"select cast('{reg['registered_at']}' as timestamptz)").fetchone()[0]
        assert first[eid] > reg_at
    drift = con.sql(
        f"select s.experiment_id, count(distinct context_digest) from {rel(landing, 'sessions')} s "
        f"join {rel(landing, 'assignments')} a using (session_id, experiment_id) "
        f"where a.arm = 'control' and s.delivered_arm = 'control' group by 1"
    ).fetchall()
    assert len(drift) == 8 and all(n == 1 for _, n in drift)
    # design: nulls, beneficial, harmful, continuous decrease, 3 arms, user unit, guardrail
    t = s.experiments
    assert sum(e == 0 for x in s.true_effects.values() for e in x.values()) >= 2
    assert s.true_effects["sim-nw-bugfix-include"] == {"treatment": pytest.approx(0.12)}
    assert any(e < 0 for x in s.true_effects.values() for e in x.values())
    assert t["sim-nw-refactor-memory"].direction == "decrease"
    assert t["sim-nw-refactor-memory"].primary_metric == "time_minutes"
    assert len(t["sim-in-support-order3"].arms) == 3
    assert t["sim-in-triage-memory"].randomization_unit == "user"
    assert t["sim-ct-analysis-order"].guardrails == [
        {"metric": "tokens", "direction": "decrease", "margin": 2000.0}]
    assert regs["sim-ct-analysis-order"]["guardrails"][0]["metric"] == "tokens"


def test_dirty_rows_present_exactly(sim):
    landing, s = sim
    assert set(s.dirty_rows) == set(DIRTY_KINDS)
    assert s.dirty_rows["delivered_arm_mismatch"] == 2
    assert all(s.dirty_rows[k] == 1 for k in DIRTY_KINDS if k != "delivered_arm_mismatch")
    malformed = 0
    for table in TABLES:
        for line in lines(landing, table):
            try:
                json.loads(line)
            except json.JSONDecodeError:
                malformed += 1
    assert malformed == s.dirty_rows["malformed_json"]
    outcomes = records(landing, "outcomes")
    assert sum("session_id" not in o for o in outcomes) == s.dirty_rows["missing_required_field"]
    assert sum(o["tokens"] < 0 for o in outcomes) == s.dirty_rows["negative_tokens"]

    from datetime import datetime
    sessions = records(landing, "sessions")
    bad_ts, naive = 0, 0
    for r in sessions:
        try:
            ts = datetime.fromisoformat(r["started_at"])
        except ValueError:
            bad_ts += 1
            continue
        naive += ts.tzinfo is None
    assert bad_ts == s.dirty_rows["unparseable_timestamp"]
    assert naive == s.naive_timestamps == 5

    con = duckdb.connect()
    regs = {r["experiment_id"]: {a["name"] for a in r["arms"]} for r in records(landing, "experiments")}
    assignments = records(landing, "assignments")
    assert sum(a["arm"] not in regs[a["experiment_id"]] for a in assignments) == s.dirty_rows["unknown_arm"]
    pairs = Counter((a["session_id"], a["experiment_id"]) for a in assignments)
    assert sum(n - 1 for n in pairs.values()) == s.dirty_rows["duplicate_assignment"]
    mismatch = con.sql(
        f"select count(*) from {rel(landing, 'sessions')} s where s.experiment_id is not null "
        f"and not exists (select 1 from {rel(landing, 'assignments')} a where a.session_id = s.session_id "
        f"and a.experiment_id = s.experiment_id and a.arm = s.delivered_arm)"
    ).fetchone()[0]
    assert mismatch == s.dirty_rows["delivered_arm_mismatch"]
    early = con.sql(
        f"select count(*) from {rel(landing, 'outcomes')} o join {rel(landing, 'assignments')} a "
        f"using (session_id) where cast(o.recorded_at as timestamptz) < cast(a.assigned_at as timestamptz)"
    ).fetchone()[0]
    assert early == s.dirty_rows["outcome_before_assignment"]


def test_provenance_and_admission_funnel(sim):
    landing, s = sim
    kinds = Counter(o["evaluator_kind"] for o in records(landing, "outcomes"))
    assert set(kinds) == {"evaluator", "human", "self_report", "heuristic"}
    assert kinds["evaluator"] / sum(kinds.values()) > 0.7
    events = records(landing, "admission_events")
    by_id: dict[str, list[str]] = {}
    for e in events:
        by_id.setdefault(e["admission_id"], []).append(e["state"])
    assert len(by_id) == s.admissions["total"]
    last = Counter(states[-1] for states in by_id.values())
    for state in ("admitted", "consumed", "blocked", "launched", "terminal"):
        assert last[state] == s.admissions[state] > 0, state
    order = ["admitted", "consumed", "launched", "terminal"]
    for states in by_id.values():
        assert states[0] == "admitted"
        assert states in (order[:k] for k in range(1, 5)) or states == ["admitted", "consumed", "blocked"]
    launched_sessions = {e["session_id"] for e in events if e["state"] == "launched"}
    sess = {r["session_id"]: r for r in records(landing, "sessions")}
    assert all(sess[sid]["admission_id"] and sess[sid]["experiment_id"] is None
               for sid in launched_sessions)
    productive = sum(e["outcome"] == "productive" for e in events if e["state"] == "terminal")
    assert productive == s.admissions["productive"]


def _arm_stats(con, landing, eid, metric):
    """Per-arm n, mean, variance of the metric from authoritative outcomes (clean rows)."""
    return {
        arm: (n, mean, var)
        for arm, n, mean, var in con.sql(
            f"select a.arm, count(*), avg(o.{metric}::double), var_samp(o.{metric}::double) "
            f"from {rel(landing, 'assignments')} a join {rel(landing, 'outcomes')} o using (session_id) "
            f"where a.experiment_id = '{eid}' and o.evaluator_kind in ('evaluator', 'human') "
            f"and a.session_id not like 'ses-dirty%' group by 1"
        ).fetchall()
    }


@pytest.mark.parametrize("eid", [
    "sim-nw-bugfix-include", "sim-nw-bugfix-order", "sim-nw-refactor-memory",
    "sim-ct-bugfix-include", "sim-ct-analysis-order", "sim-in-support-order3",
    "sim-in-docs-include",
])
def test_true_effects_recoverable(sim, eid):
    landing, s = sim
    truth = s.experiments[eid]
    con = duckdb.connect()
    stats = _arm_stats(con, landing, eid, truth.primary_metric)
    n0, m0, v0 = stats[truth.control_arm]
    assert n0 >= 300
    for arm, effect in s.true_effects[eid].items():
        n1, m1, v1 = stats[arm]
        se = math.sqrt(v0 / n0 + v1 / n1)
        assert abs((m1 - m0) - effect) < 4 * se, (arm, m1 - m0, effect, se)
    for metric, effects in truth.guardrail_effects.items():
        g = _arm_stats(con, landing, eid, metric)
        for arm, effect in effects.items():
            se = math.sqrt(g["control"][2] / g["control"][0] + g[arm][2] / g[arm][0])
            assert abs((g[arm][1] - g["control"][1]) - effect) < 4 * se


def test_beneficial_binary_arm_difference(sim):
    landing, s = sim
    stats = _arm_stats(duckdb.connect(), landing, "sim-nw-bugfix-include", "success")
    (n0, p0, _), (n1, p1, _) = stats["control"], stats["treatment"]
    se = math.sqrt(p0 * (1 - p0) / n0 + p1 * (1 - p1) / n1)
    assert abs(p0 - 0.50) < 4 * math.sqrt(0.25 / n0)
    assert abs((p1 - p0) - 0.12) < 3 * se
    assert (p1 - p0) - 1.96 * se > 0  # clearly beneficial at the end of the run


def test_user_randomized_effect_with_user_means(sim):
    landing, s = sim
    con = duckdb.connect()
    rows = con.sql(
        f"with u as (select a.arm, a.unit_id, avg(o.score) as m, count(*) as k "
        f"from {rel(landing, 'assignments')} a join {rel(landing, 'outcomes')} o using (session_id) "
        f"where a.experiment_id = 'sim-in-triage-memory' and o.evaluator_kind in ('evaluator', 'human') "
        f"group by 1, 2) select arm, count(*), avg(m), var_samp(m), max(k) from u group by 1"
    ).fetchall()
    stats = {arm: (n, m, v, k) for arm, n, m, v, k in rows}
    assert max(k for *_, k in stats.values()) > 5  # returning users
    # a user keeps one arm
    split = con.sql(
        f"select count(*) from (select unit_id from {rel(landing, 'assignments')} "
        f"where experiment_id = 'sim-in-triage-memory' group by 1 having count(distinct arm) > 1)"
    ).fetchone()[0]
    assert split == 0
    (n0, m0, v0, _), (n1, m1, v1, _) = stats["control"], stats["treatment"]
    se = math.sqrt(v0 / n0 + v1 / n1)
    assert abs((m1 - m0) - s.true_effects["sim-in-triage-memory"]["treatment"]) < 4 * se
