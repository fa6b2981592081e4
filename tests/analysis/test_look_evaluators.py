"""The evaluators a knowledge record cites (sql/select_look_evaluators.sql) against a look-by-look
oracle: at the end of the look's day, each session assigned by then counts its latest
authoritative outcome recorded by then (ties: smallest evaluator id, then version)."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import numpy as np
import polars as pl

from sql import load_sql
from tests.analysis.experience_days import build_experience_days

UTC = dt.timezone.utc
START = dt.datetime(2026, 10, 1, tzinfo=UTC)
EVALUATORS = [("judge", "1.0", "evaluator"), ("judge", "1.1", "evaluator"), ("alice", "1", "human"), ("bob", "1", "human")]
"""Index 2 x (judge or human) + (recorded on or after day 7)."""


def _world(seed: int = 8):
    """Sixteen sessions of two experiments, each with one to three authoritative outcomes (some recorded
    at the same time, to exercise the ties) and a non-authoritative one now and then."""
    rng = np.random.default_rng(seed)
    records, experience = [], []
    for k in range(16):
        session, experiment = f"s{k}", ("e1", "e2")[k % 2]
        assigned = START + dt.timedelta(hours=int(rng.integers(0, 24 * 10)))
        times = sorted(assigned + dt.timedelta(hours=int(h)) for h in rng.integers(0, 24 * 6, rng.integers(1, 4)))
        if len(times) > 1 and rng.random() < 0.3:
            times[1] = times[0]  # two outcomes recorded at once
        # judge 1.0 and alice decide the first week, judge 1.1 and bob after (a re-evaluation)
        outcomes = [(session, *EVALUATORS[int(rng.integers(0, 2)) * 2 + (t >= START + dt.timedelta(days=7))], t, True)
                    for t in times]
        if rng.random() < 0.2:
            outcomes.append((session, "heuristic", "0", "heuristic", times[0], False))
        records += outcomes
        authoritative = [o for o in outcomes if o[5]]
        chosen = sorted(authoritative, key=lambda o: (-o[4].timestamp(), o[1], o[2]))[0]
        experience.append((experiment, session, assigned, chosen[1], chosen[2], chosen[3], chosen[4], len(authoritative)))
    return records, experience


def _oracle(records, experience, looks):
    out = {}
    for experiment, as_of in looks:
        end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), tzinfo=UTC)
        cited = set()
        for e, session, assigned, *_ in experience:
            if e != experiment or assigned >= end:
                continue
            known = [r for r in records if r[0] == session and r[5] and r[4] < end]
            if known:
                best = sorted(known, key=lambda r: (-r[4].timestamp(), r[1], r[2]))[0]
                cited.add(best[1:4])
        if cited:
            out[(experiment, as_of)] = [{"evaluator_id": i, "evaluator_version": v, "evaluator_kind": k}
                                        for i, v, k in sorted(cited, key=lambda t: (t[2], t[0], t[1]))]
    return out


def test_each_look_cites_the_evaluators_of_the_outcomes_it_counts():
    records, experience = _world()
    looks = [(e, (START + dt.timedelta(days=d)).date()) for e in ("e1", "e2") for d in range(18)]
    with duckdb.connect() as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute("CREATE TABLE verification_records (session_id VARCHAR, evaluator_id VARCHAR, evaluator_version VARCHAR, "
                    "evaluator_kind VARCHAR, recorded_at TIMESTAMPTZ, authoritative BOOLEAN)")
        con.executemany("INSERT INTO verification_records VALUES (?, ?, ?, ?, ?, ?)", records)
        con.execute("CREATE TABLE experience (experiment_id VARCHAR, session_id VARCHAR, assigned_at TIMESTAMPTZ, "
                    "evaluator_id VARCHAR, evaluator_version VARCHAR, evaluator_kind VARCHAR, recorded_at TIMESTAMPTZ, "
                    "authoritative_outcomes BIGINT, arm VARCHAR DEFAULT 'a', is_control BOOLEAN DEFAULT false, "
                    "verified BOOLEAN DEFAULT true, success DOUBLE, time_minutes DOUBLE, tokens DOUBLE, score DOUBLE, "
                    "model VARCHAR, budget DOUBLE)")
        con.executemany("INSERT INTO experience (experiment_id, session_id, assigned_at, evaluator_id, evaluator_version, "
                        "evaluator_kind, recorded_at, authoritative_outcomes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", experience)
        con.execute("CREATE TABLE staged_experiments AS SELECT DISTINCT experiment_id, 'success' AS primary_metric, "
                    "'{}' AS metric_caps FROM experience")
        build_experience_days(con)
        con.register("cited_looks", pl.DataFrame(looks, schema={"experiment_id": pl.String, "as_of": pl.Date}, orient="row"))
        found = {(e, a): json.loads(v) for e, a, v in con.execute(load_sql("select_look_evaluators")).fetchall()}
    expected = _oracle(records, experience, looks)
    assert found == expected
    # the world is not trivial: citations change along the looks, and re-evaluations replace some
    assert len({json.dumps(v) for v in expected.values()}) >= 3 and sum(1 for *_, n in experience if n > 1) >= 4
