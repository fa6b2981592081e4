"""Several `zcl run` started together on a brand-new DAGSTER_HOME all succeed: creating Dagster's
storage is serialised by a lock file (without it, one process dies on Dagster's schema
migration table: "Version table 'alembic_version' has more than one head present")."""

import duckdb

from tests.end_to_end.cli_process import start_zcl, zcl_env
from tests.warehouse_checks import conservation_gaps
from zcl_assets.simulation.sessions import simulate_sessions


def test_three_first_runs_at_once_all_succeed(tmp_path):
    home = tmp_path / "new_dagster_home"  # does not exist yet: `zcl` creates it
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    simulate_sessions(landing, seed=5, start="2026-10-01", days=2, inject_dirty=False)
    env = zcl_env(home, landing, warehouse)
    runs = [start_zcl(env, "run", "--as-of", "2026-10-02") for _ in range(3)]
    outputs = [r.communicate(timeout=600)[0].decode() for r in runs]
    for run, output in zip(runs, outputs):
        assert run.returncode == 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        assert con.execute("SELECT count(*) FROM experiment_analysis WHERE as_of = DATE '2026-10-02'").fetchone()[0] > 0
