"""A run of the PostgreSQL source that dies anywhere loses, duplicates and double-reports nothing.

After a first night has landed, the source changes (new days, a corrected outcome, a deleted
session). A run then dies: in the middle of the read, between reading and writing (some day
files written, others not), after its change ledger but before its state, or killed with
SIGKILL by the clock as ``zcl import postgres``. The next run must leave the landing of a run
that never died, byte for byte, and report exactly its changes, once.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.end_to_end.cli_process import PROJECT
from tests.sources import zcl_world as world
from tests.sources.postgres_server import execute_script
from zcl_assets.sources import sync
from zcl_assets.sources.config import SourceConfig
from zcl_assets.sources.sync import sync_postgres

SEED = 3
KILLS = 6


def _files(landing):
    return {p.relative_to(landing).as_posix(): p.read_bytes() for p in sorted(landing.rglob("*.parquet"))}


def _changes(summary):
    return [c.as_dict() for c in summary.changes]


@pytest.fixture
def changed_source(zcl_db, tmp_path):
    """(uri, landing and state after night one, the landing and changes of an uninterrupted second run)."""
    world.insert(zcl_db, "zcl_experiments", world.experiments(SEED))
    world.insert_days(zcl_db, SEED, range(0, 3))
    night_one = tmp_path / "night-one"
    sync_postgres(zcl_db, night_one / "landing", night_one / "state", SourceConfig())
    world.insert_days(zcl_db, SEED, range(3, 5))
    outcome = world.day_rows(SEED, 1)["zcl_outcomes"][2]
    execute_script(zcl_db, f"UPDATE zcl_outcomes SET success = NOT success WHERE id = '{outcome['id']}'")
    session = world.day_rows(SEED, 2)["zcl_sessions"][9]
    execute_script(zcl_db, f"DELETE FROM zcl_sessions WHERE id = '{session['id']}'")
    reference = tmp_path / "reference"
    shutil.copytree(night_one, reference)
    summary = sync_postgres(zcl_db, reference / "landing", reference / "state", SourceConfig())
    assert summary.total("deleted") >= 2 and summary.total("updated") == 1
    return zcl_db, night_one, _files(reference / "landing"), _changes(summary)


class Crash(Exception):
    pass


def _after(calls, n, what):
    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) > n:
            raise Crash
        return what(*args, **kwargs)
    return wrapper


def _dying_stream(original, days_before_crash):
    def stream(*args, **kwargs):
        for k, item in enumerate(original(*args, **kwargs)):
            if k == days_before_crash:
                raise Crash
            yield item
    return stream


@pytest.mark.parametrize("where", ["mid_read", "between_read_and_write", "before_state"])
def test_a_run_that_dies_is_redone_exactly_once(changed_source, monkeypatch, where):
    uri, night_one, reference_files, reference_changes = changed_source
    landing, state = night_one / "landing", night_one / "state"
    with monkeypatch.context() as mp:
        if where == "mid_read":
            mp.setattr(sync.postgres, "stream_days", _dying_stream(sync.postgres.stream_days, 1))
        elif where == "between_read_and_write":
            mp.setattr(sync._Run, "write", _after([], 4, sync._Run.write))  # the experiments and three days land
        else:
            mp.setattr(sync, "_save_state", _after([], 0, sync._save_state))
        with pytest.raises(Crash):
            sync_postgres(uri, landing, state, SourceConfig())
    redone = sync_postgres(uri, landing, state, SourceConfig())
    assert _files(landing) == reference_files
    assert _changes(redone) == reference_changes
    assert redone.run == 2 and json.loads(redone.ledger.read_text())["changes"] == reference_changes
    again = sync_postgres(uri, landing, state, SourceConfig())
    assert (again.changes, again.files_written, again.files_removed) == ([], [], [])


def test_zcl_import_postgres_killed_at_random_moments_converges(changed_source, tmp_path):
    uri, night_one, reference_files, reference_changes = changed_source
    landing, state = night_one / "landing", night_one / "state"
    env = {**os.environ, "ZCL_POSTGRES_URI": uri, "ZCL_LANDING_DIR": str(landing), "ZCL_POSTGRES_STATE_DIR": str(state),
           "ZCL_POSTGRES_CONFIG": str(tmp_path / "none.yaml")}
    rng = np.random.default_rng(20261201)
    command = [sys.executable, "-m", "zcl_assets.cli", "import", "postgres"]
    interrupted = 0
    for _ in range(KILLS):
        process = subprocess.Popen(command, env=env, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not (state / "pending" / "run").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # the run has begun once its journal is open
        time.sleep(float(rng.uniform(0, 0.3)))
        process.send_signal(signal.SIGKILL)
        process.wait()
        interrupted += json.loads((state / "state.json").read_text())["run"] == 2  # killed before it finished
    assert interrupted >= 1
    done = subprocess.run(command, env=env, cwd=PROJECT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _files(landing) == reference_files
    ledgers = sorted((state / "changes").glob("*.json"))[1:]  # after night one's
    reported = [c for p in ledgers for c in json.loads(p.read_text())["changes"]]
    assert reported == reference_changes  # once, whichever run finished first
