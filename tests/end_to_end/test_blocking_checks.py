"""A blocking check evaluated by its asset's own step still stops what depends on the asset."""

import dagster as dg
import pytest

from tests.end_to_end.synthetic_world import AS_OF, build_world
from zcl_assets.defs.ingest import checks
from zcl_assets.runner import run_night


def test_a_broken_row_conservation_stops_the_night_before_the_experience(tmp_path, monkeypatch):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    build_world().write(landing)
    kept = checks._conservation

    def broken_for_outcomes(con, table, days, asset):
        result = kept(con, table, days, asset)
        return result._replace(passed=False) if table == "outcomes" else result

    monkeypatch.setattr(checks, "_conservation", broken_for_outcomes)
    with pytest.MonkeyPatch.context() as mp, dg.DagsterInstance.ephemeral() as instance:
        mp.setenv("ZCL_LANDING_DIR", str(landing))
        mp.setenv("ZCL_WAREHOUSE", str(warehouse))
        (result,) = run_night(instance, AS_OF)
    assert not result.success
    evaluations = {(e.asset_key.path[-1], e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    assert evaluations[("staged_outcomes", "row_conservation")] is False
    assert evaluations[("staged_sessions", "row_conservation")] is True
    materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert {"staged_sessions", "staged_outcomes"} <= materialized  # the failing table is written, its check says no
    assert not materialized & {"verification_records", "experience", "experiment_analysis"}  # downstream never ran
