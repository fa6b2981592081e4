"""The look's counting SQL on hand-made tables: users seen in two arms, the rows of each day
and how many were quarantined, and the snapshot of an aggregate export a day stands for.

Each expected figure is written out beside its rows. Three planted bugs passed every test of
the look before these (docs/testing.md): a user in exactly two arms not counted, assignments
excluded at the experience stage not counted as violations, and the first snapshot of a day
read instead of the last.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from sql import load_sql

UTC = dt.timezone.utc
DAY0 = dt.date(2026, 10, 1)
END = dt.datetime(2026, 10, 9, tzinfo=UTC)  # the end of the look of day 7 (2026-10-08)


def at(day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime.combine(DAY0 + dt.timedelta(days=day), dt.time(hour), tzinfo=UTC)


def connect(**tables: pl.DataFrame) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for name, frame in tables.items():
        con.register(f"{name}_rows", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_rows")
    return con


def test_a_user_seen_in_two_arms_is_counted_on_the_day_of_the_second():
    rows = [  # (user, arm, day)
        ("u1", "a", 1), ("u1", "b", 3),  # two arms: counted on day 3
        ("u2", "a", 1), ("u2", "a", 2),  # one arm twice: not counted
        ("u3", "a", 1), ("u3", "b", 2), ("u3", "c", 4),  # three arms: counted once, on day 2
        (None, "a", 1), (None, "b", 1),  # no user id: cannot be told apart
        ("u4", "a", 2), ("u4", "b", 7),  # second arm on day 7: counted on day 7
        ("u5", "a", 2), ("u5", "b", 8),  # second arm after the look: not in it
    ]
    experience = pl.DataFrame(
        [{"experiment_id": "e", "user_id": u, "arm": a, "assigned_at": at(d)} for u, a, d in rows],
        schema={"experiment_id": pl.String, "user_id": pl.String, "arm": pl.String,
                "assigned_at": pl.Datetime("us", "UTC")})
    con = connect(experience=experience)
    # the stored state of a first build (every day), then the look's read of it
    con.register("dirty", pl.DataFrame({"experiment_id": ["e"], "from_day": [dt.date(1, 1, 1)]}))
    con.execute(f"CREATE TABLE look_mixed_users AS {load_sql('aggregate_mixed_users')}", {"from_at": dt.datetime(1, 1, 1, tzinfo=UTC)})
    found = con.execute(load_sql("select_users_in_both_arms"), {"as_of_end": END}).fetchall()
    assert found == [("e", DAY0 + dt.timedelta(days=2), 1), ("e", DAY0 + dt.timedelta(days=3), 1),
                     ("e", DAY0 + dt.timedelta(days=7), 1)]


def test_every_quarantined_assignment_counts_as_a_violation_of_its_day():
    day1, day2 = DAY0 + dt.timedelta(days=1), DAY0 + dt.timedelta(days=2)
    con = connect(
        staged_assignments=pl.DataFrame({"experiment_id": ["e"] * 5, "partition_day": [day1] * 3 + [day2] * 2}),
        staged_sessions=pl.DataFrame({"session_id": ["s1", "s2"], "experiment_id": ["e", None]}),
        staged_outcomes=pl.DataFrame({"session_id": ["s1", "s2"], "partition_day": [day2, day2]}),
        staged_experiments=pl.DataFrame({"experiment_id": ["e"], "primary_metric": ["success"]}),
        staged_arm_snapshots=pl.DataFrame(schema={"experiment_id": pl.String, "metric": pl.String,
                                                  "partition_day": pl.Date}),
    )
    keys = pl.DataFrame(
        [  # (table, stage, day, experiment, session, metric)
            ("assignments", "contract", day1, "e", "s7", None),  # a bad row: a violation
            ("assignments", "experience", day1, "e", "s8", None),  # excluded from the experience: one too
            ("assignments", "experience", day2, "e", "s9", None),
            ("outcomes", "contract", day2, None, "s1", None),  # an outcome of e's session s1
            ("outcomes", "experience", day2, None, "s1", None),  # outcomes are judged at the contract only
            ("assignments", "contract", None, "e", "s6", None),  # no day: a malformed record
        ],
        schema={"source_table": pl.String, "stage": pl.String, "partition_day": pl.Date, "experiment_id": pl.String,
                "session_id": pl.String, "metric": pl.String}, orient="row")
    con.register("quarantined_keys", keys)
    con.register("epoch_bounds", pl.DataFrame({"experiment_id": ["e"], "epoch": [1], "starts_at": [at(2, 0)]}))
    # the stored daily counts of a first build (every day of every experiment), then the look's read
    con.register("dirty_days", pl.DataFrame({"day": [day1, day2]}))
    con.register("dirty_experiments", pl.DataFrame({"experiment_id": ["e"]}))
    con.execute(f"CREATE TABLE look_violation_days AS {load_sql('aggregate_violation_days')}")
    found = con.execute(load_sql("select_contract_violations"), {"as_of_end": END}).fetchall()
    # day 1: 3 staged + 2 quarantined assignments, 2 bad; day 2 (epoch 1 from day 2): 2 staged
    # assignments, 1 quarantined, the staged outcome of s1 and its quarantined one: 2 bad of 5.
    assert found == [("e", 0, day1, 2, 5), ("e", 1, day2, 2, 5)]


def test_a_day_of_an_aggregate_export_is_its_last_snapshot():
    snapshots = pl.DataFrame(
        [  # (arm, at, n, mean, file, row): cumulative figures, several a day
            ("control", at(1, 8), 100, 0.50, "a.csv", 1),
            ("control", at(1, 20), 150, 0.52, "a.csv", 2),  # the day's last: stands for day 1
            ("control", at(2, 9), 210, 0.51, "a.csv", 3),
            ("control", at(2, 9), 220, 0.53, "b.csv", 1),  # same instant, later file: stands for day 2
            ("control", at(7, 23), 300, 0.55, "b.csv", 2),
            ("control", at(8, 1), 400, 0.56, "b.csv", 3),  # after the look
        ],
        schema={"arm": pl.String, "at": pl.Datetime("us", "UTC"), "n": pl.Int64, "mean": pl.Float64,
                "source_file": pl.String, "source_row": pl.Int64}, orient="row",
    ).with_columns(experiment_id=pl.lit("e"), metric=pl.lit("success"), variance=pl.col("mean") * (1 - pl.col("mean")))
    con = connect(staged_arm_snapshots=snapshots)
    found = con.execute(load_sql("select_snapshot_statistics"), {"as_of_end": END}).fetchall()
    assert [(day, n, mean) for _, _, _, day, n, mean, _ in found] == [
        (DAY0 + dt.timedelta(days=1), 150, 0.52), (DAY0 + dt.timedelta(days=2), 220, 0.53),
        (DAY0 + dt.timedelta(days=7), 300, 0.55)]
