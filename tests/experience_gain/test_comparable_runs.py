"""Same task, model and budget: runs in a (model, budget) cell of one arm only are left out, and a
user-randomized task averages each user first (sql/experience_gain/select_memory_mode_arms.sql)."""

import duckdb
import pytest

from sql import load_sql


def test_only_cells_seen_in_both_arms_count_and_units_are_averaged_first():
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE staged_experiments AS SELECT 'm1' AS experiment_id, 'o1' AS org_id, 't1' AS task_type, "
        "'memory_mode' AS kind, 'score' AS primary_metric, 'increase' AS direction, 'off' AS control_arm, "
        "2 AS min_samples_per_arm, '[{\"name\":\"off\"},{\"name\":\"on\"}]'::JSON AS arms, NULL::JSON AS metric_caps"
    )
    runs = [  # session, unit (user), on?, model, score
        ("s1", "u1", False, "a", 0.5), ("s2", "u1", False, "a", 0.7),  # u1 off: mean 0.6
        ("s3", "u2", False, "a", 0.4),
        ("s4", "u3", True, "a", 0.9), ("s5", "u4", True, "a", 0.7),
        ("s6", "u5", True, "new-model", 1.0),  # model only ever used with recall: not comparable
    ]
    con.execute("CREATE TABLE experience (experiment_id VARCHAR, session_id VARCHAR, unit_id VARCHAR, is_control BOOLEAN, "
                "verified BOOLEAN, score DOUBLE, success DOUBLE, time_minutes DOUBLE, tokens DOUBLE)")
    con.execute("CREATE TABLE staged_sessions (session_id VARCHAR, model VARCHAR, budget DOUBLE)")
    for sid, unit, on, model, score in runs:
        con.execute("INSERT INTO experience VALUES ('m1', ?, ?, ?, true, ?, NULL, NULL, NULL)", [sid, unit, not on, score])
        con.execute("INSERT INTO staged_sessions VALUES (?, ?, 50000)", [sid, model])
    con.execute("CREATE TABLE gain_scope AS SELECT 'm1' AS experiment_id")  # the experiments read: all
    row = con.execute(load_sql("experience_gain/select_memory_mode_arms")).fetchone()
    names = [d[0] for d in con.description]
    r = dict(zip(names, row, strict=True))
    # off: units u1 (0.6) and u2 (0.4): mean 0.5, variance 0.02; on: u3, u4: mean 0.8, variance 0.02
    assert (r["n_off"], r["runs_off"], r["n_on"], r["runs_on"], r["incomparable_runs"]) == (2, 3, 2, 2, 1)
    assert (r["mean_off"], r["var_off"]) == (pytest.approx(0.5), pytest.approx(0.02))
    assert (r["mean_on"], r["var_on"]) == (pytest.approx(0.8), pytest.approx(0.02))
