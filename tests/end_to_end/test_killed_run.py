"""A `zcl run` killed hard (kill -9) does not block later runs: the next `zcl run` fails the
dead run and frees its slot of the `duckdb` pool, then completes with consistent tables."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
from filelock import FileLock

from tests.warehouse_checks import conservation_gaps
from zcl_assets.simulation.sessions import simulate_sessions

PROJECT = Path(__file__).resolve().parents[2]


def _zcl(env, *args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "zcl_assets.cli", *args], env=env, cwd=PROJECT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)


def test_next_run_releases_a_killed_run(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    simulate_sessions(landing, seed=11, start="2026-10-01", days=40)
    env = {**os.environ, "DAGSTER_HOME": str(home), "ZCL_LANDING_DIR": str(landing), "ZCL_WAREHOUSE": str(warehouse)}

    first = _zcl(env, "run", "--as-of", "2026-11-15")
    # Wait until the first run holds its pool slot (its first asset is writing), then kill it.
    deadline = time.monotonic() + 120
    # This process opens the instance too: it takes the lock `zcl` holds while creating storage.
    with FileLock(str(home / ".instance.lock"), timeout=300):
        instance = dg.DagsterInstance.from_config(str(home))
        instance.get_runs(limit=1)
    with instance:
        while time.monotonic() < deadline:
            runs = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
            if runs and warehouse.exists():
                break
            time.sleep(0.2)
        assert runs, "the first run never started"
        time.sleep(1.0)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)

        second = _zcl(env, "run", "--as-of", "2026-11-15")
        output, _ = second.communicate(timeout=600)
        assert second.returncode == 0, output.decode()[-3000:]
        assert b"marked failed and its pool slots freed" in output
        killed = instance.get_run_by_id(runs[0].run_id)
        assert killed.status == dg.DagsterRunStatus.FAILURE

    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        assert con.execute("SELECT count(*) FROM experiment_analysis").fetchone()[0] > 0
