"""The per-experiment view in Dagster: a partition of experiment_report per experiment, and checks
that describe the look they belong to."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest

from tests.reports.conftest import NIGHTS, SRM_EXPERIMENT
from zcl_assets.reports.formatting import interval
from zcl_assets.runner import run_night
from zcl_assets.stats.srm import SRM_ALPHA


def _latest(instance: dg.DagsterInstance, experiment_id: str) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("experiment_report"), asset_partitions=[experiment_id]), limit=1
    ).records
    assert records, experiment_id
    return records[0].asset_materialization.metadata


def test_every_experiment_is_a_partition_with_decision_interval_srm_and_plan(looked):
    with dg.DagsterInstance.from_config(str(looked.home)) as instance:
        partitions = set(instance.get_dynamic_partitions("experiment"))
        with duckdb.connect(str(looked.warehouse), read_only=True) as con:
            registered = {r[0] for r in con.execute("SELECT experiment_id FROM staged_experiments").fetchall()}
            low, high = con.execute(
                "SELECT cs_low, cs_high FROM experiment_analysis WHERE experiment_id = 'sim-nw-bugfix-include' "
                "AND is_primary AND as_of = ?", [NIGHTS[-1]]
            ).fetchone()
            looks = [r[0] for r in con.execute(
                "SELECT DISTINCT CAST(as_of AS VARCHAR) FROM experiment_analysis WHERE experiment_id = 'sim-nw-bugfix-include' "
                "ORDER BY 1"
            ).fetchall()]
        assert partitions == registered
        metadata = _latest(instance, "sim-nw-bugfix-include")
        assert metadata["as_of"].value == NIGHTS[-1]
        assert interval(low, high) in metadata["deciding_interval"].value
        assert "asymptotic confidence sequence" in metadata["deciding_interval"].value
        assert metadata["srm"].value.startswith("SRM ok")
        assert "days left" in metadata["plan"].value
        assert "Decision:" in metadata["verdict"].value and len(metadata["verdict"].value) < 1000
        assert metadata["plots"].value.count("data:image/svg+xml;base64,") == 2
        assert metadata["dagster/row_count"].value == 1
        history = metadata["look_history"].value
        assert [r.data["as_of"] for r in history.records] == looks[::-1] and set(NIGHTS) <= set(looks)  # newest first
        assert {c.name for c in history.schema.columns} >= {"as_of", "cs", "units"}
        assert metadata["cs_low"].value == pytest.approx(low)

        srm = _latest(instance, SRM_EXPERIMENT)
        assert srm["srm"].value.startswith("SRM mismatch")

        # Three nights of the index asset, each with its count of experiments per attention group.
        index = instance.fetch_materializations(dg.AssetKey("analysis_report"), limit=10).records
        assert len(index) == len(NIGHTS)
        latest = index[0].asset_materialization.metadata
        assert latest["dagster/row_count"].value == len(registered)
        assert latest["invalid"].value >= 1
        assert [r.data["experiment"] for r in latest["experiments"].value.records][0] == SRM_EXPERIMENT
        # the index links every experiment to its page, the one whose allocation check fires first
        index = latest["index"].value
        assert index.count("](/assets/experiment_report?view=partitions&partition=") == len(registered)
        assert index.index(f"partition={SRM_EXPERIMENT})") < min(
            index.index(f"partition={e})") for e in registered - {SRM_EXPERIMENT})
        assert "SRM mismatch (1)" in latest["attention"].value and len(latest["attention"].value) < 1000
        drawn = [e for e in looked.results[NIGHTS[-1]].get_asset_check_evaluations() if e.check_name == "every_page_drawn"]
        assert [e.passed for e in drawn] == [True]
        html = Path(latest["html_report"].value)
        assert html.name == f"look-{NIGHTS[-1]}.html" and "<!DOCTYPE html>" in html.read_text(encoding="utf-8")


def test_sample_ratio_check_reports_the_look_just_taken(looked, monkeypatch):
    # Re-take the first night after the later ones: the check must describe that look, with named fields.
    monkeypatch.setenv("ZCL_LANDING_DIR", str(looked.landing))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(looked.warehouse))
    monkeypatch.setenv("DAGSTER_HOME", str(looked.home))
    with dg.DagsterInstance.from_config(str(looked.home)) as instance:
        results = run_night(instance, NIGHTS[0])
        assert results and all(r.success for r in results)
        first = _sample_ratio(results[-1])
        with duckdb.connect(str(looked.warehouse), read_only=True) as con:
            expected = con.execute(
                "SELECT experiment_id, treatment_arm, srm_units_control, srm_units_treatment FROM experiment_analysis "
                "WHERE is_primary AND srm_sequential_p < ? AND as_of = ? ORDER BY srm_sequential_p",
                [SRM_ALPHA, NIGHTS[0]],
            ).fetchall()
        # Restore the newest night's look for the other tests of this session.
        assert all(r.success for r in run_night(instance, NIGHTS[-1]))
    last = _sample_ratio(looked.results[NIGHTS[-1]])
    assert not first.passed and expected
    assert first.metadata["as_of"].value == NIGHTS[0] and last.metadata["as_of"].value == NIGHTS[-1]
    examples = first.metadata["examples"].value
    assert [c.name for c in examples.schema.columns][:4] == ["experiment_id", "treatment_arm", "units_control", "units_treatment"]
    rows = [(r.data["experiment_id"], r.data["treatment_arm"], r.data["units_control"], r.data["units_treatment"])
            for r in examples.records]
    assert rows == [tuple(r) for r in expected]
    newest = {(r.data["experiment_id"], r.data["treatment_arm"]): r.data["units_control"]
              for r in last.metadata["examples"].value.records}
    assert newest[(SRM_EXPERIMENT, "treatment")] > dict(((e, a), u) for e, a, u, _ in rows)[(SRM_EXPERIMENT, "treatment")]


def _sample_ratio(result) -> dg.AssetCheckEvaluation:
    return next(e for e in result.get_asset_check_evaluations() if e.check_name == "sample_ratio")


def test_one_page_can_be_redrawn_from_the_ui(looked):
    # Materializing one partition of experiment_report (the UI's Materialize button) redraws that page alone.
    from resources import Warehouse
    from zcl_assets.defs.reports.assets import experiment_report

    with dg.DagsterInstance.from_config(str(looked.home)) as instance:
        result = dg.materialize(
            [experiment_report], partition_key="sim-ct-analysis-order", instance=instance,
            resources={"warehouse": Warehouse(path=str(looked.warehouse))},
        )
        assert result.success
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("experiment_report"), asset_partitions=["sim-ct-analysis-order"]),
            limit=1,
        ).records
        assert records[0].run_id == result.run_id
        metadata = records[0].asset_materialization.metadata
        assert metadata["as_of"].value == NIGHTS[-1] and "Decision:" in metadata["verdict"].value
