"""A run killed between loading and staging is redone by the next night."""

import dagster as dg
import duckdb

from contracts.tables import CONTRACTS
from tests.warehouse_checks import conservation_gaps
from zcl_assets.definitions import defs
from zcl_assets.runner import run_night
from zcl_assets.simulation.sessions import simulate_sessions


def test_loaded_but_unstaged_days_are_staged_by_the_next_run(pipeline_paths, instance):
    landing, warehouse = pipeline_paths
    simulate_sessions(landing, seed=3, start="2026-10-01", days=3, inject_dirty=False)
    # The first run dies after loading (archiving) and before staging.
    job = defs().resolve_job_def("ingest_job")
    raw_only = job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey(f"raw_{t}") for t in CONTRACTS])
    assert raw_only.success
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM landing_manifest").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM internal.pending_days").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM staged_sessions").fetchone()[0] == 0

    results = run_night(instance, "2026-10-03")
    assert results and all(r.success for r in results)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert conservation_gaps(con) == {}
        assert con.execute("SELECT count(*) FROM staged_sessions").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM internal.pending_days").fetchone()[0] == 0
