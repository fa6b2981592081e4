"""Within ``held_open`` the warehouse is opened once, its connections are cursors of it, and it
is closed (checkpointed) when the block ends, so other processes can open it again."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time

import dagster as dg
import duckdb
import pytest

from zcl_assets import warehouse as warehouse_module
from zcl_assets.warehouse import DuckDBWarehouse, held_open, released
from zcl_assets.warehouse import ensure_schema as _ensure_schema

# Another process tries to open the file read-only: prints "opened" or the kind of error.
OPEN_ELSEWHERE = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1], read_only=True).close()
    print("opened")
except duckdb.IOException as exc:
    print("locked" if "lock" in str(exc).lower() else repr(exc))
"""


def _opened_elsewhere(path) -> str:
    return subprocess.run([sys.executable, "-c", OPEN_ELSEWHERE, str(path)], capture_output=True, text=True,
                          timeout=60).stdout.strip()


@pytest.fixture
def opens(monkeypatch) -> list[bool]:
    """The files the warehouse opens (their read_only flags), in order."""
    made: list[bool] = []
    real = DuckDBWarehouse._open

    def counted(self, db_path, read_only):
        made.append(read_only)
        return real(self, db_path, read_only)

    monkeypatch.setattr(DuckDBWarehouse, "_open", counted)
    return made


def test_the_connections_of_a_held_block_share_one_open_file_closed_at_its_end(tmp_path, opens, monkeypatch):
    path = tmp_path / "warehouse.duckdb"
    w = DuckDBWarehouse(path=str(path))
    with w.connect() as con:  # the file exists before the block, as on every night but the first
        con.execute("CREATE TABLE t (x INTEGER)")
    ensured = []
    monkeypatch.setattr(warehouse_module, "ensure_schema", lambda con: ensured.append(con) or _ensure_schema(con))
    with held_open(str(path)):
        with w.connect() as con:
            con.execute("INSERT INTO t VALUES (1)")
        assert _opened_elsewhere(path) == "locked"  # held between the blocks, as within them
        with w.connect(read_only=True) as con:
            assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
        with w.connect() as con:
            con.execute("CREATE TEMP TABLE scratch AS SELECT 1 AS y")  # a step's temp tables stay its own
        with w.connect() as con:
            assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'scratch'").fetchone() == (0,)
    assert opens == [False, False]  # the one before the block, then one read-write open for all four blocks
    assert len(ensured) == 1  # by the first write connection of the block
    assert _opened_elsewhere(path) == "opened"
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT x FROM t").fetchall() == [(1,)]


def test_a_held_block_that_never_connects_never_opens_the_file(tmp_path, opens):
    path = tmp_path / "warehouse.duckdb"
    with held_open(str(path)):
        pass
    assert not path.exists() and opens == []


def test_a_read_only_connection_to_a_missing_file_still_says_so_while_it_is_held(tmp_path):
    path = tmp_path / "warehouse.duckdb"
    with held_open(str(path)), pytest.raises(FileNotFoundError, match="does not exist yet"):
        with DuckDBWarehouse(path=str(path)).connect(read_only=True):
            pass


def test_an_invalidated_database_is_opened_again_by_the_next_connection(tmp_path, opens):
    path = tmp_path / "warehouse.duckdb"
    w = DuckDBWarehouse(path=str(path))
    with held_open(str(path)):
        with pytest.raises(duckdb.FatalException), w.connect():
            raise duckdb.FatalException("stands for a fatal error that invalidates the database")
        with w.connect() as con:  # opens the file again
            assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'quarantine'").fetchone() == (1,)
    assert opens == [False, False]


def test_nested_holds_of_one_file_close_it_once_at_the_outer_end(tmp_path, opens):
    path = tmp_path / "warehouse.duckdb"
    w = DuckDBWarehouse(path=str(path))
    with held_open(str(path)):
        with held_open(str(tmp_path / "." / "warehouse.duckdb")), w.connect():
            pass
        assert _opened_elsewhere(path) == "locked"
        with w.connect():
            pass
    assert opens == [False] and warehouse_module._HELD == {}


def test_a_released_block_lets_other_processes_in_and_the_hold_resumes_after_it(tmp_path, opens):
    path = tmp_path / "warehouse.duckdb"
    w = DuckDBWarehouse(path=str(path))
    with held_open(str(path)):
        with w.connect() as con:
            con.execute("CREATE TABLE t AS SELECT 1 AS x")
        with released(str(path)):
            assert _opened_elsewhere(path) == "opened"  # the held database was closed, its table kept
            with w.connect(read_only=True) as con:  # opened as outside the hold: read-only, beside the other process
                assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
        assert _opened_elsewhere(path) == "opened"  # nothing holds it until the next connection
        with w.connect(), w.connect():
            assert _opened_elsewhere(path) == "locked"
    assert opens == [False, True, False]


def test_the_report_lets_its_page_drawer_read_a_held_warehouse(tmp_path, monkeypatch):
    from zcl_assets.defs.reports import pages

    path = tmp_path / "warehouse.duckdb"
    with DuckDBWarehouse(path=str(path)).connect():
        pass
    seen = []
    monkeypatch.setattr(pages, "_start", lambda request, warn: seen.append(_opened_elsewhere(request.warehouse)))
    request = pages.PageRequest(str(path), "1GB", None, str(tmp_path / "plots"))
    with held_open(str(path)):
        with DuckDBWarehouse(path=str(path)).connect():  # an earlier step of the night opened it for the hold
            pass
        with pages.page_source(request, expected=5, child_from=1):
            pass
        with DuckDBWarehouse(path=str(path)).connect():  # held again
            pass
        with pages.page_source(request, expected=5, child_from=10):  # no child: the hold stays
            assert _opened_elsewhere(path) == "locked"
    assert seen == ["opened"]


def test_a_night_opens_the_warehouse_for_writing_once(pipeline_paths, instance, opens):
    from zcl_assets.runner import run_night
    from zcl_assets.simulation.sessions import simulate_sessions

    landing, _warehouse = pipeline_paths
    simulate_sessions(landing, seed=8, start="2026-10-01", days=3, inject_dirty=False)
    (first,) = run_night(instance, "2026-10-03")  # its first step creates the file, the others share it
    assert first.success and opens == [False]
    simulate_sessions(landing, seed=8, start="2026-10-01", days=4, inject_dirty=False)
    opens.clear()
    (night,) = run_night(instance, "2026-10-04")
    assert night.success
    assert opens.count(False) == 1 and night.success  # the planning reads before the run; the steps share one open file
    assert len(night.get_step_success_events()) > 10


def _wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_the_hold_lets_go_between_connections_while_another_process_wants_the_file(tmp_path, opens):
    path = tmp_path / "warehouse.duckdb"
    w = DuckDBWarehouse(path=str(path))
    wanted = threading.Event()
    with held_open(str(path), others_waiting=wanted.is_set, every_s=0.02):
        with w.connect() as con:
            con.execute("CREATE TABLE t AS SELECT 1 AS x")
            wanted.set()
            time.sleep(0.3)  # a cursor in use: the watcher waits for it
            assert _opened_elsewhere(path) == "locked"
        assert _wait_for(lambda: _opened_elsewhere(path) == "opened")  # let go once no cursor is in use
        wanted.clear()
        with w.connect() as con:  # opens the file again, and holds it
            assert con.execute("SELECT x FROM t").fetchall() == [(1,)]
        time.sleep(0.1)
        assert _opened_elsewhere(path) == "locked"
    assert opens == [False, False]


def _project_instance(folder):
    from zcl_assets.paths import project_root

    folder.mkdir()
    shutil.copy(project_root() / "dagster_home" / "dagster.yaml", folder / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(folder))


@dg.op
def _noop():
    return None


@dg.job
def _job():
    _noop()


def test_a_run_of_another_process_that_holds_or_waits_for_the_pool_wants_the_warehouse(tmp_path):
    from zcl_assets.runner import HOST_TAG, PID_TAG, WAREHOUSE_POOL, _owner_tags, others_want_the_warehouse

    with _project_instance(tmp_path / "home") as instance:
        wanted = others_want_the_warehouse(instance)
        assert not wanted()  # no run at all
        mine = instance.create_run_for_job(_job, tags=_owner_tags())
        other = instance.create_run_for_job(_job, tags={HOST_TAG: socket.gethostname(), PID_TAG: "1"})
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default(WAREHOUSE_POOL)  # limit 1 (dagster_home/dagster.yaml)
        assert storage.claim_concurrency_slot(WAREHOUSE_POOL, mine.run_id, "a_step", 0).is_claimed
        assert not wanted()  # a run of this process only
        assert not storage.claim_concurrency_slot(WAREHOUSE_POOL, other.run_id, "its_step", 0).is_claimed
        assert wanted()  # the other process's run waits for the slot
        storage.free_concurrency_slot_for_step(mine.run_id, "a_step")
        assert storage.claim_concurrency_slot(WAREHOUSE_POOL, other.run_id, "its_step", 0).is_claimed
        assert wanted()  # and now holds it


# Another process's run: once the night holds the warehouse, it waits for the pool's slot (it gets the
# slot as a step of the night frees it), then opens the warehouse to write, waiting up to 60 s.
OTHER_RUN = """
import os, socket, sys, time
import dagster as dg, duckdb
from zcl_assets.runner import HOST_TAG, PID_TAG, WAREHOUSE_POOL
from zcl_assets.warehouse import DuckDBWarehouse

@dg.op
def noop():
    return None

@dg.job
def job():
    noop()

home, warehouse = sys.argv[1:3]
with dg.DagsterInstance.from_config(home) as instance:
    run = instance.create_run_for_job(job, tags={HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())})
    storage = instance.event_log_storage
    while True:  # until the night holds the warehouse
        try:
            duckdb.connect(warehouse, read_only=True).close()
        except duckdb.IOException:
            break
        time.sleep(0.02)
    while not storage.claim_concurrency_slot(WAREHOUSE_POOL, run.run_id, "its_step", 0).is_claimed:
        time.sleep(0.05)
    try:
        with DuckDBWarehouse(path=warehouse, lock_timeout_s=60).connect() as con:
            con.execute("CREATE TABLE written_by_another_process AS SELECT 1 AS x")
    finally:
        storage.free_concurrency_slot_for_step(run.run_id, "its_step")
print("written")
"""


def test_a_night_lets_another_process_write_between_its_steps_instead_of_both_waiting(pipeline_paths, tmp_path):
    """The run of another process takes the pool's slot between two steps of the night and waits for
    the warehouse, while the night's next step waits for the slot: the night lets the warehouse go."""
    from zcl_assets.runner import run_night
    from zcl_assets.simulation.sessions import simulate_sessions

    landing, warehouse = pipeline_paths
    simulate_sessions(landing, seed=8, start="2026-10-01", days=3, inject_dirty=False)
    home = tmp_path / "home"
    with _project_instance(home) as instance:
        other = subprocess.Popen([sys.executable, "-c", OTHER_RUN, str(home), str(warehouse)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            (night,) = run_night(instance, "2026-10-03")
            out, err = other.communicate(timeout=120)
        finally:
            other.kill()
    assert other.returncode == 0 and out.strip() == "written", err[-2000:]
    assert night.success
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT x FROM written_by_another_process").fetchall() == [(1,)]
