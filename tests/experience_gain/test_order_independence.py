"""The arm statistics of Experience Gain do not depend on the order rows reach the SQL.

A floating-point sum depends on the order of its terms: (0.1 + 0.2) + 0.3 is
0.6000000000000001 and 0.1 + (0.2 + 0.3) is 0.6. A parallel aggregate sums in whatever order
its threads deliver, so two fresh loads of the same files gave Experience Gain figures that
differed in their last bits. ``select_memory_mode_arms.sql`` sums exact integers (values
scaled by a power of two and rounded at 2^-45 of the largest); here the same runs, inserted
in opposite orders and summed on one thread (so the order of insertion is the order of the
terms), give the same bits.
"""

import duckdb

from sql import load_sql

SCORES = [0.1, 0.2, 0.3, 0.7, 0.11, 0.13, 0.17, 0.19, 0.23, 0.29]


def _arm_statistics(order):
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute(
        "CREATE TABLE staged_experiments AS SELECT 'e' AS experiment_id, 'o' AS org_id, 't' AS task_type, 'score' AS primary_metric, "
        "'increase' AS direction, 'off' AS control_arm, 1 AS min_samples_per_arm, 'memory_mode' AS kind, "
        """CAST('[{"name": "off"}, {"name": "on"}]' AS JSON) AS arms, CAST(NULL AS JSON) AS metric_caps"""
    )
    con.execute("CREATE TABLE experience (experiment_id VARCHAR, is_control BOOLEAN, unit_id VARCHAR, session_id VARCHAR, "
                "score DOUBLE, success DOUBLE, time_minutes DOUBLE, tokens DOUBLE, verified BOOLEAN)")
    con.execute("CREATE TABLE staged_sessions (session_id VARCHAR, model VARCHAR, budget DOUBLE)")
    con.execute("CREATE TABLE gain_scope AS SELECT 'e' AS experiment_id")  # the experiments a night reads
    rows = [(f"s{i}", i % 2 == 0, score) for i, score in enumerate(SCORES)]
    for session, control, score in (rows if order == "forward" else rows[::-1]):
        con.execute("INSERT INTO experience VALUES ('e', ?, ?, ?, ?, NULL, NULL, NULL, true)", [control, session, session, score])
        con.execute("INSERT INTO staged_sessions VALUES (?, 'm', 1.0)", [session])
    return con.execute(load_sql("experience_gain/select_memory_mode_arms")).fetchall()


def test_arm_means_and_variances_keep_their_bits_whatever_the_order_of_the_rows():
    forward, backward = _arm_statistics("forward"), _arm_statistics("backward")
    assert forward == backward
    (row,) = forward
    # recall on = the odd sessions' scores, recall off = the even ones': the means and sample
    # variances by hand, to the scaling step (2^-45 of 0.7, about 2e-14)
    on, off = SCORES[1::2], SCORES[0::2]
    assert abs(row[9] - sum(on) / 5) < 1e-12 and abs(row[13] - sum(off) / 5) < 1e-12
    assert abs(row[10] - sum((x - sum(on) / 5) ** 2 for x in on) / 4) < 1e-12
