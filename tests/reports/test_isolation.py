"""A page, plot or metadata failure of one experiment is recorded against that experiment and never fails
the night's report for the others."""

from __future__ import annotations

import shutil

import dagster as dg

from tests.reports.conftest import SRM_EXPERIMENT
from zcl_assets.defs.reports import pages as report_pages
from zcl_assets.defs.reports.assets import EVERY_PAGE_DRAWN, analysis_report

BROKEN = "sim-nw-bugfix-order"


def test_one_experiment_whose_page_cannot_be_drawn_is_recorded_and_the_others_are_drawn(looked, tmp_path, monkeypatch):
    from resources import Warehouse

    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(looked.warehouse, warehouse)  # the night's report reads it; its HTML and plots go beside the copy
    drawn = report_pages.view_plots

    def plots_failing_for_one(view, cache):
        if view.experiment_id == BROKEN:
            raise OverflowError("axis span overflows")
        return drawn(view, cache)

    monkeypatch.setattr(report_pages, "view_plots", plots_failing_for_one)
    with dg.DagsterInstance.ephemeral() as instance:
        result = dg.materialize([analysis_report], instance=instance, resources={"warehouse": Warehouse(path=str(warehouse))})
        assert result.success
        pages = {
            r.asset_materialization.partition: r.asset_materialization.metadata
            for r in instance.fetch_materializations(dg.AssetKey("experiment_report"), limit=100).records
        }
    assert "OverflowError: axis span overflows" in pages[BROKEN]["report_error"].value
    assert "REPORT FAILED" in pages[BROKEN]["verdict"].value
    assert all("report_error" not in m and "Decision" in m["verdict"].value for e, m in pages.items() if e != BROKEN)
    assert len(pages) > 5

    (check,) = [e for e in result.get_asset_check_evaluations() if e.check_name == EVERY_PAGE_DRAWN]
    assert not check.passed and check.metadata["failed"].value == 1 and BROKEN in check.metadata["errors"].value
    (index,) = [m.metadata for m in result.asset_materializations_for_node("analysis_report")
                if m.asset_key == dg.AssetKey("analysis_report")]
    rows = [r.data for r in index["experiments"].value.records]
    assert rows[0]["experiment"] == BROKEN and rows[0]["decision"] == "report failed"  # first, before the SRM alarm
    assert rows[1]["experiment"] == SRM_EXPERIMENT
    assert "report failed (1)" in index["attention"].value
    html = (tmp_path / "reports").glob("look-*.html")
    page = next(html).read_text(encoding="utf-8")
    assert "This card could not be drawn: OverflowError: axis span overflows" in page
    assert page.count('<div class="card" id="x-') == len(pages)
