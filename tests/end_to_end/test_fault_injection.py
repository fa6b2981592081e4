"""Kill `zcl run` at seeded random moments, while the landing changes between a first and a
corrected state: after every kill the warehouse opens, and one uninterrupted run then gives
exactly the tables of a fresh load of the final landing."""

import signal
import time

import duckdb
import numpy as np

from tests.end_to_end.cli_process import fresh_home, start_zcl, zcl_env
from tests.end_to_end.test_corrections import OPTIONS, _export, _rows
from tests.warehouse_checks import conservation_gaps, table_rows
from zcl_assets.importers.ab_export import import_ab_export

KILLS = 10
AS_OF = "2017-01-31"
COMPARED = {
    "staged_experiments": (), "staged_sessions": (), "staged_assignments": (), "staged_outcomes": (),
    "quarantine": ("quarantined_at",), "experience": (), "experiment_analysis": ("analysed_at",),
}


def _land(tmp_path, landing, rows):
    src = tmp_path / "export.csv"
    src.write_text(_export(rows))
    import_ab_export(src, landing, OPTIONS)


def _tables(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        assert con.execute("SELECT count(*) FROM internal.pending_days").fetchone()[0] == 0
        return {
            t: [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in table_rows(con, t, drop)]
            for t, drop in COMPARED.items()
        }


def _run_to_end(env):
    process = start_zcl(env, "run", "--as-of", AS_OF)
    output = process.communicate(timeout=600)[0].decode()
    assert process.returncode == 0, output[-3000:]
    return output


def test_killed_runs_leave_a_warehouse_that_converges(tmp_path):
    first, final = _rows(seed=1, n=300), _rows(seed=2, n=280)
    reference_landing, reference_warehouse = tmp_path / "ref" / "landing", tmp_path / "ref" / "warehouse.duckdb"
    (tmp_path / "ref").mkdir()
    _land(tmp_path, reference_landing, final)
    started = time.monotonic()
    _run_to_end(zcl_env(fresh_home(tmp_path / "ref"), reference_landing, reference_warehouse))
    duration = time.monotonic() - started
    expected = _tables(reference_warehouse)

    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    env = zcl_env(fresh_home(tmp_path), landing, warehouse)
    rng = np.random.default_rng(20261130)
    killed_in_a_run = 0
    for _ in range(KILLS):
        _land(tmp_path, landing, first if rng.random() < 0.5 else final)
        process = start_zcl(env, "run", "--as-of", AS_OF)
        time.sleep(float(rng.uniform(0.3, duration)))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        killed_in_a_run += b"run nightly_job" in process.stdout.read()
        if warehouse.exists():  # a killed writer never leaves a warehouse that cannot be opened
            with duckdb.connect(str(warehouse), read_only=True) as con:
                con.execute("SELECT count(*) FROM landing_manifest").fetchone()

    assert killed_in_a_run >= KILLS // 2  # most kills hit a run in progress, not the start-up

    _land(tmp_path, landing, final)
    output = _run_to_end(env)
    assert _tables(warehouse) == expected, output[-2000:]
