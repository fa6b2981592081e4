"""What one pass of the look reads from a warehouse: its nights, and its stored aggregates reused.

The warehouse is made by hand: one registration of an aggregate export (frozen plan through
``plan_registrations``) and its arm snapshots on two days; every expected night is written
out from those rows.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import polars as pl

from contracts.evaluation import load_evaluation_contracts
from sql import load_sql
from tests.analysis.looks import T0, registration
from tests.fresh_look import refresh_state
from zcl_assets.analysis.look import read_inputs
from zcl_assets.analysis.look_state import AGGREGATES
from zcl_assets.analysis.registration import plan_registrations
from zcl_assets.analysis.schema import EXPERIMENT_PLANS
from zcl_assets.experience.build import build_experience, build_verification_records
from zcl_assets.warehouse import ensure_schema, transaction

UTC = dt.timezone.utc
DAY0 = T0.date()  # the registration day, 2026-10-01
SNAPSHOT_DAYS = (2, 6)  # 2026-10-03 and 2026-10-07
AS_OF = "2026-10-10"


def _warehouse() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    ensure_schema(con)
    EXPERIMENT_PLANS.ensure(con)
    lineage = {"partition_day": DAY0, "source_file": "experiments/a.jsonl", "source_row": 0, "schema_version": 1}
    reg = pl.DataFrame([{**lineage, **registration("x", ["control", "treatment"])}],
                       schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                         "registered_at": pl.Datetime("us", "UTC")})
    plans = plan_registrations(reg.drop(*lineage), aggregate_exports=pl.DataFrame({"experiment_id": ["x"]}))
    snapshots = pl.DataFrame([
        {"partition_day": DAY0 + dt.timedelta(days=k), "source_file": "arm_snapshots/a.csv", "source_row": i,
         "schema_version": 1, "experiment_id": "x", "arm": arm, "metric": "success",
         "at": T0 + dt.timedelta(days=k, hours=12), "n": 100 * (k + 1), "mean": 0.5, "variance": 0.25}
        for i, (k, arm) in enumerate((k, a) for k in SNAPSHOT_DAYS for a in ("control", "treatment"))],
        schema_overrides={"at": pl.Datetime("us", "UTC")})
    manifest = pl.DataFrame({"table_name": ["arm_snapshots"], "partition_day": [DAY0 + dt.timedelta(days=6)],
                             "file_name": ["a.csv"], "size_bytes": [1], "mtime_ns": [1], "sha256": ["0"],
                             "archive_path": ["a.csv"], "row_count": [4],
                             "loaded_at": [dt.datetime(2026, 10, 8, tzinfo=UTC)], "superseded_at": [None]},
                            schema_overrides={"superseded_at": pl.Datetime("us", "UTC")})
    with transaction(con, plans_batch=plans, reg_rows=reg, snap_rows=snapshots, manifest_rows=manifest):
        con.execute(load_sql("insert_new_experiment_plans"))
        con.execute("INSERT INTO staged_experiments BY NAME SELECT * FROM reg_rows")
        con.execute("INSERT INTO staged_arm_snapshots BY NAME SELECT * FROM snap_rows")
        con.execute("INSERT INTO landing_manifest BY NAME SELECT * FROM manifest_rows")
    # the derived tables, empty (no sessions): built by the experience stage itself
    build_verification_records(con, load_evaluation_contracts())
    build_experience(con, load_evaluation_contracts())
    return con


class _Recorder:
    """A warehouse connection that records the SQL it is asked to run."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con, self.queries = con, []

    def execute(self, query, *args):
        self.queries.append(query)
        return self.con.execute(query, *args)

    def __getattr__(self, name):
        return getattr(self.con, name)


def test_a_pass_looks_at_the_registration_day_the_days_with_data_and_the_night_asked_for():
    # registered 10-01, snapshots on 10-03 and 10-07, looked at as of 10-10: four nights, not
    # the ten days from the registration on
    con = _warehouse()
    refresh_state(con, AS_OF)
    looks = read_inputs(con, AS_OF).looks
    assert looks.get_column("experiment_id").unique().to_list() == ["x"]
    assert looks.get_column("as_of").to_list() == [dt.date(2026, 10, 1), dt.date(2026, 10, 3), dt.date(2026, 10, 7),
                                                   dt.date(2026, 10, 10)]


def test_a_second_pass_with_nothing_newly_landed_reuses_the_stored_state():
    # The first pass builds the look's state with every aggregate; a second one (same night,
    # then a later one) has no change to read, runs none of them, and reads the same figures.
    con = _warehouse()
    texts = [load_sql(name) for name in AGGREGATES]

    def ran(recorder):
        return [t for t in texts if any(t in q for q in recorder.queries)]

    first = _Recorder(con)
    refresh_state(first, AS_OF)
    inputs = read_inputs(first, AS_OF)
    assert ran(first) == texts
    for night in (AS_OF, "2026-10-12"):
        again = _Recorder(con)
        assert refresh_state(again, night).is_empty()
        reused = read_inputs(again, night)
        assert ran(again) == [], night
        assert reused.arm_stats.sort("arm", "day").equals(inputs.arm_stats.sort("arm", "day"))
    # a fresh build aggregates again, beside the stored state
    fresh = _Recorder(con)
    refresh_state(fresh, AS_OF, fresh=True)
    assert ran(fresh) == texts


def test_a_binary_snapshot_counts_its_successes_from_its_mean_and_units():
    # the snapshots of _warehouse(): mean 0.5 of n = 300 (10-03) and n = 700 (10-07) per arm,
    # so 150 and 350 successes, each unit one observation
    con = _warehouse()
    refresh_state(con, AS_OF)
    stats = read_inputs(con, AS_OF).arm_stats.sort("arm", "day")
    assert stats.select("arm", "n", "successes", "observations").rows() == [
        ("control", 300, 150.0, 300.0), ("control", 700, 350.0, 700.0),
        ("treatment", 300, 150.0, 300.0), ("treatment", 700, 350.0, 700.0)]
