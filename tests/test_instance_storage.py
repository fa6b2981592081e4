"""The instance storage of dagster_home/dagster.yaml: Dagster's SQLite files, engines kept, the run index kept open.

The oracle is Dagster's own SQLite storage (``storage: sqlite``) reading and writing the same
instance folder: what one writes, the other reads the same.
"""

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import sqlalchemy
from dagster._core.event_api import EventLogRecord
from dagster._core.storage.event_log import sql_event_log
from dagster._serdes import serialize_value

from zcl_assets import instance_storage
from zcl_assets.instance_storage import (
    Engines,
    SqliteEventLogStorage,
    SqliteRunStorage,
    SqliteScheduleStorage,
    event_record_json,
)

from .test_instance_config import PROJECT

PROJECT_CONFIG = (PROJECT / "dagster_home" / "dagster.yaml").read_text()
DAGSTER_OWN = "telemetry:\n  enabled: false\nstorage:\n  sqlite:\n    base_dir:\n      env: DAGSTER_HOME\n"

days = dg.StaticPartitionsDefinition(["2026-01-01", "2026-01-02", "2026-01-03"])


@dg.asset(partitions_def=days, check_specs=[dg.AssetCheckSpec("rows_positive", asset="daily")])
def daily(context: dg.AssetExecutionContext):
    for page in range(context.op_config if isinstance(context.op_config, int) else 0):
        context.log_event(dg.AssetMaterialization(asset_key="page", partition=f"p{page}", metadata={"n": page}))
    yield dg.Output(1, metadata={"rows": len(context.partition_key)})
    yield dg.AssetCheckResult(check_name="rows_positive", passed=True, metadata={"day": context.partition_key})


job = dg.Definitions(assets=[daily], jobs=[dg.define_asset_job("daily_job", selection=[daily])]).resolve_job_def("daily_job")


def _home(path, config: str, monkeypatch) -> None:
    path.mkdir(exist_ok=True)
    (path / "dagster.yaml").write_text(config)
    monkeypatch.setenv("DAGSTER_HOME", str(path))


def _run(instance: dg.DagsterInstance, day: str, pages: int = 0) -> dg.ExecuteInProcessResult:
    return job.execute_in_process(instance=instance, partition_key=day, run_config={"ops": {"daily": {"config": pages}}})


def _seen(instance: dg.DagsterInstance) -> dict:
    """What a reader of the instance sees: runs, each day's materialization and check, the page events."""
    key = dg.AssetKey("daily")
    materialized = instance.fetch_materializations(key, limit=100).records
    checks = instance.event_log_storage.get_asset_check_execution_history(dg.AssetCheckKey(key, "rows_positive"), limit=10)
    pages = instance.fetch_materializations(dg.AssetKey("page"), limit=100).records
    return {
        "runs": sorted((r.run_id, r.status.value) for r in instance.get_runs()),
        "materialized": {m.partition_key: (m.run_id, m.asset_materialization.metadata["rows"].value) for m in materialized},
        "checks": sorted((c.run_id, c.status.value) for c in checks),
        "pages": sorted((p.run_id, p.partition_key) for p in pages),
    }


def test_project_config_selects_the_storage_and_reads_what_dagster_wrote(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _home(home, DAGSTER_OWN, monkeypatch)
    with dg.DagsterInstance.get() as own:
        assert type(own.run_storage).__module__.startswith("dagster.")
        assert _run(own, "2026-01-01", pages=3).success
        before = _seen(own)
    (home / "dagster.yaml").write_text(PROJECT_CONFIG)
    with dg.DagsterInstance.get() as ours:
        assert (type(ours.run_storage), type(ours.event_log_storage), type(ours.schedule_storage)) == (
            SqliteRunStorage, SqliteEventLogStorage, SqliteScheduleStorage)
        assert _seen(ours) == before  # the same files, read the same
        assert _run(ours, "2026-01-02", pages=2).success
        after = _seen(ours)
    assert len(after["runs"]) == 2 and set(after["materialized"]) == {"2026-01-01", "2026-01-02"}
    assert len(after["pages"]) == 5 and len(after["checks"]) == 2
    (home / "dagster.yaml").write_text(DAGSTER_OWN)
    with dg.DagsterInstance.get() as own:
        assert _seen(own) == after  # and Dagster's own storage reads what this one wrote


def test_an_event_reuses_the_engine_of_its_database(tmp_path, monkeypatch):
    """Engines are made once per database, however many events a run stores (Dagster's own storage
    makes one per query: about 2 per event)."""
    made = []

    def counting(*args, **kwargs):
        made.append(str(args[0]))
        return sqlalchemy.create_engine(*args, **kwargs)

    monkeypatch.setattr(instance_storage, "create_engine", counting)
    _home(tmp_path / "home", PROJECT_CONFIG, monkeypatch)
    with dg.DagsterInstance.get() as instance:
        assert _run(instance, "2026-01-01", pages=2).success
        few = len(made)
        assert _run(instance, "2026-01-02", pages=40).success
        many = len(made) - few
    # the second run: its own run database only (runs, index and schedules were made by the first)
    assert many == 1, made[few:]
    assert few <= 4, made


def test_an_assets_index_entry_is_what_dagster_serializes(tmp_path, monkeypatch):
    # the oracle: Dagster's serialize_value of the latest materialization record of each asset,
    # against the text the project's storage wrote into the index without serializing twice
    _home(tmp_path, PROJECT_CONFIG, monkeypatch)
    records = []  # what Dagster's event log serializes as a record: nothing, the entry's text is reused
    monkeypatch.setattr(sql_event_log, "serialize_value", lambda value, **kw: records.append(type(value).__name__)
                        or serialize_value(value, **kw))
    table = dg.MetadataValue.table([dg.TableRecord({"arm": "b", "n": 3})], schema=dg.TableSchema(
        columns=[dg.TableColumn("arm", "string", description="the arm"), dg.TableColumn("n", "int")]))
    with dg.DagsterInstance.get() as instance:
        assert _run(instance, "2026-01-01", pages=2).success
        instance.report_runless_asset_event(dg.AssetMaterialization("page", partition="p9", metadata={"t": table}))
        for name in ("daily", "page"):
            latest = instance.fetch_materializations(dg.AssetKey(name), limit=1).records[0]
            with sqlite3.connect(tmp_path / "history" / "runs" / "index.db") as db:
                (stored,) = db.execute("SELECT last_materialization FROM asset_keys WHERE asset_key = ?",
                                       [dg.AssetKey(name).to_string()]).fetchone()
            assert stored == serialize_value(latest)
    assert "EventLogEntry" in records and "EventLogRecord" not in records
    event = latest.event_log_entry
    assert event_record_json(serialize_value(event), 41) == serialize_value(EventLogRecord(storage_id=41, event_log_entry=event))


def test_wipe_closes_the_kept_connections_before_deleting_the_run_databases(tmp_path, monkeypatch):
    _home(tmp_path / "home", PROJECT_CONFIG, monkeypatch)
    with dg.DagsterInstance.get() as instance:
        first = _run(instance, "2026-01-01", pages=1)
        instance.wipe()
        assert instance.get_runs() == [] and instance.get_records_for_run(first.run_id).records == []
        second = _run(instance, "2026-01-02", pages=1)
        assert [r.run_id for r in instance.get_runs()] == [second.run_id]
        assert _seen(instance)["pages"] == [(second.run_id, "p0")]


def test_threads_at_once_share_the_run_storage(tmp_path, monkeypatch):
    """More threads than the one kept connection: each gets a connection, nothing is lost."""
    _home(tmp_path / "home", PROJECT_CONFIG, monkeypatch)
    with dg.DagsterInstance.get() as instance:
        errors = []

        def add(i: int) -> None:
            try:
                for j in range(5):
                    instance.create_run_for_job(job, run_id=f"{i:04d}{j:04d}-0000-0000-0000-000000000000", tags={"t": str(i)})
            except Exception as error:  # noqa: BLE001 - collected for the assertion below
                errors.append(error)

        threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(instance.get_runs()) == 40


def test_engines_keep_the_most_recently_used_and_close_the_others(tmp_path):
    engines = Engines(kept=2, keep_open=True)
    a, b = (f"sqlite:///{tmp_path / name}.db" for name in "ab")
    first_a = engines.get(a)
    with first_a.connect() as conn:
        conn.exec_driver_sql("SELECT 1")
    assert first_a.pool.checkedin() == 1  # the connection is kept open
    assert engines.get(b) is not first_a and engines.get(a) is first_a  # a is now the most recent
    engines.get(f"sqlite:///{tmp_path / 'c'}.db")  # b, the least recent, is closed and dropped
    assert engines.get(a) is first_a and first_a.pool.checkedin() == 1
    engines.close()
    assert first_a.pool.checkedin() == 0


def test_the_storage_is_in_the_folder_the_instance_is_opened_from(tmp_path, monkeypatch):
    """As with Dagster's default storage: ``from_config(folder)`` stores in that folder, whatever
    ``DAGSTER_HOME`` says (unset, or another folder)."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    _home(home, PROJECT_CONFIG, monkeypatch)
    for env in (None, str(elsewhere)):
        if env is None:
            monkeypatch.delenv("DAGSTER_HOME")
        else:
            monkeypatch.setenv("DAGSTER_HOME", env)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert isinstance(instance.event_log_storage, SqliteEventLogStorage)
            assert _run(instance, "2026-01-03").success
    assert (home / "history" / "runs.db").exists() and (home / "history" / "runs" / "index.db").exists()
    assert not elsewhere.exists()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert len(instance.get_runs()) == 2


WRITER = """
import sys, time
import dagster as dg
with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
    run = instance.get_run_by_id(sys.argv[2])
    for i in range(5):
        instance.report_engine_event(f"written {i}", run)
        time.sleep(0.2)
    time.sleep(2)  # the writer's instance stays open after its events, as a long run's does
"""


def test_a_run_log_followed_live_sees_every_event_another_process_writes(tmp_path, monkeypatch):
    """The UI follows a running run by watching its database file (``watch_event_logs``), which changes
    only when the last connection to it closes: a run's database must not keep one open, in the
    writer or in the reader."""
    home = tmp_path / "home"
    _home(home, PROJECT_CONFIG, monkeypatch)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.create_run_for_job(job)
        instance.report_engine_event("before the watch", run)
        assert instance.get_records_for_run(run.run_id).records  # the reader has read the run's database
        seen = []
        instance.watch_event_logs(run.run_id, None, lambda event, cursor: seen.append(event.message))
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(home), run.run_id], cwd=PROJECT,
                                  env={**os.environ, "PYTHONPATH": str(PROJECT)})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (writer.poll() is None or len(seen) < 5):
            time.sleep(0.1)
        writer.wait(timeout=30)
        instance.end_watch_event_logs(run.run_id, seen.append)
    assert [m for m in seen if m.startswith("written")] == [f"written {i}" for i in range(5)]


def _open_files(folder: Path) -> list[str]:
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)) and ".db" in target:
            names.append(Path(target).name)
    return sorted(names)


def test_nothing_stays_open_once_instances_are_disposed(tmp_path, monkeypatch):
    """``DagsterInstance.dispose`` disposes the run and event storages only (not the schedule storage):
    no database of the folder may stay open after it, however many instances came and went."""
    home = tmp_path / "home"
    _home(home, PROJECT_CONFIG, monkeypatch)
    for _ in range(5):
        with dg.DagsterInstance.from_config(str(home)) as instance:
            instance.all_instigator_state()
            assert _run(instance, "2026-01-01").success
            assert "runs.db" in _open_files(home) and "index.db" in _open_files(home)  # kept open while in use
    assert _open_files(home) == []


@dg.asset(partitions_def=days, backfill_policy=dg.BackfillPolicy.single_run(),
          check_specs=[dg.AssetCheckSpec("rows_positive", asset="ranged")])
def ranged(context: dg.AssetExecutionContext):
    days_run = context.partition_key_range
    check = dg.AssetCheckKey(dg.AssetKey("ranged"), "rows_positive")  # planned before the step starts
    seen = [c.status.value for c in context.instance.event_log_storage.get_asset_check_execution_history(check, limit=5)]
    return dg.MaterializeResult(metadata={"first": days_run.start, "last": days_run.end, "check_seen": str(seen)},
                                check_results=[dg.AssetCheckResult(check_name="rows_positive", passed=True)])


ranged_job = dg.Definitions(assets=[ranged], jobs=[dg.define_asset_job("ranged_job", selection=[ranged])]).resolve_job_def(
    "ranged_job")
RANGE = {"dagster/asset_partition_range_start": "2026-01-01", "dagster/asset_partition_range_end": "2026-01-03"}
RANGE_DAYS = ["2026-01-01", "2026-01-02", "2026-01-03"]


def _ranged_view(instance: dg.DagsterInstance, run_id: str) -> dict:
    """A range run as a reader sees it, its run id left out: the run's log in order, each day's
    planned and stored materialization, the asset's entry, its indexed tags and its check."""
    key = dg.AssetKey("ranged")
    log = [(e.dagster_event.event_type_value, str(e.dagster_event.asset_key), e.dagster_event.partition)
           for e in instance.all_logs(run_id) if e.dagster_event and e.dagster_event.asset_key]
    materialized = instance.fetch_materializations(key, limit=10).records
    planned = instance.get_latest_planned_materialization_info(key, "2026-01-02")
    checks = instance.event_log_storage.get_asset_check_execution_history(dg.AssetCheckKey(key, "rows_positive"), limit=10)
    latest = instance.get_latest_materialization_event(key)
    return {
        "log": log,
        "materialized": sorted((m.partition_key, m.asset_materialization.metadata["first"].value,
                                m.asset_materialization.metadata["check_seen"].value) for m in materialized),
        "partitions": sorted(instance.get_materialized_partitions(key)),
        "planned": planned is not None and planned.run_id == run_id,
        # the asset's entry holds the latest materialization's record, storage id included
        "latest": (latest.run_id == run_id, latest.dagster_event.partition,
                   instance.get_asset_records([key])[0].asset_entry.last_materialization_record
                   == instance.fetch_materializations(key, limit=1).records[0]),
        "tags": sorted(sorted(t) for t in instance.get_event_tags_for_asset(key)),
        "checks": [c.status.value for c in checks],
    }


def test_a_range_of_partitions_is_stored_in_batches_that_read_as_dagsters_own_writes(tmp_path, monkeypatch, capfd):
    # the oracle: the same run stored by Dagster's own SQLite storage, one event at a time
    batches = []
    store_batch = SqliteEventLogStorage.store_event_batch

    def recorded(self, events):
        store_batch(self, events)
        batches.append(sorted(e.dagster_event_type.value for e in events))  # a batch that raised is not recorded

    monkeypatch.setattr(SqliteEventLogStorage, "store_event_batch", recorded)
    views = {}
    for name, config in (("own", DAGSTER_OWN), ("project", PROJECT_CONFIG)):
        _home(tmp_path / name, config, monkeypatch)
        with dg.DagsterInstance.get() as instance:
            result = ranged_job.execute_in_process(instance=instance, tags=RANGE)
            assert result.success
            views[name] = _ranged_view(instance, result.run_id)
            run_id = result.run_id
    assert views["project"] == views["own"]
    assert views["own"]["partitions"] == RANGE_DAYS
    assert views["own"]["materialized"][0] == ("2026-01-01", "2026-01-01", "['PLANNED']")
    # the planned events of the run (3 days and the check) and the step's 3 materializations, each in one batch
    assert sorted(batches) == [["ASSET_CHECK_EVALUATION_PLANNED"] + ["ASSET_MATERIALIZATION_PLANNED"] * 3,
                               ["ASSET_MATERIALIZATION"] * 3], batches
    assert "Exception while storing event batch" not in capfd.readouterr().err  # Dagster's fallback never ran
    (tmp_path / "project" / "dagster.yaml").write_text(DAGSTER_OWN)
    with dg.DagsterInstance.get() as own:
        assert _ranged_view(own, run_id) == views["own"]  # Dagster's storage reads the batches as its own writes


def test_a_batch_whose_index_write_fails_is_stored_once_by_dagsters_fallback(tmp_path, monkeypatch, capfd):
    """The index refuses the first batch of asset events: their rows already in the run's log are
    taken back, Dagster stores the batch again event by event, and each event is stored once."""
    failures = []
    store_tags = SqliteEventLogStorage._store_asset_event_tags

    def refuse_once(self, conn, events, ids):
        if not failures:
            failures.append(len(events))
            raise sqlalchemy.exc.OperationalError("INSERT", {}, Exception("database is locked"))
        return store_tags(self, conn, events, ids)

    monkeypatch.setattr(SqliteEventLogStorage, "_store_asset_event_tags", refuse_once)
    _home(tmp_path / "home", PROJECT_CONFIG, monkeypatch)
    with dg.DagsterInstance.get() as instance:
        result = ranged_job.execute_in_process(instance=instance, tags=RANGE)
        assert result.success
        view = _ranged_view(instance, result.run_id)
    assert failures == [3] and "Exception while storing event batch" in capfd.readouterr().err
    assert sorted(view["log"]) == sorted([("ASSET_MATERIALIZATION_PLANNED", "AssetKey(['ranged'])", d) for d in RANGE_DAYS]
                                         + [("ASSET_MATERIALIZATION", "AssetKey(['ranged'])", d) for d in RANGE_DAYS])
    last = [p for kind, _, p in view["log"] if kind == "ASSET_MATERIALIZATION"][-1]  # Dagster's order of the days varies
    assert view["partitions"] == RANGE_DAYS and view["latest"] == (True, last, True)
