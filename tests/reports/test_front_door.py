"""What `make run` prints on a fresh clone, read as a person reads it: how many experiments were landed,
where the HTML report is, what needs attention first and in which order, labels that say what each
figure is, and nothing of a later time beside an earlier look."""

from __future__ import annotations

import re

import duckdb
from click.testing import CliRunner

from tests.reports.conftest import BUNDLED_NIGHT
from zcl_assets.cli import main
from zcl_assets.defs.reports.assets import report_path
from zcl_assets.reports.alarms import ATTENTION_ORDER, DECIDED_ORDER
from zcl_assets.reports.experiments import OWN_KINDS, load_views


def _report(bundled_night, monkeypatch, *args: str) -> str:
    for key, value in bundled_night.env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(main, ["report", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_import_counts_the_experiments_the_report_lists(bundled_night):
    with duckdb.connect(str(bundled_night.warehouse), read_only=True) as con:
        kinds = dict(con.execute("SELECT experiment_id, kind FROM staged_experiments").fetchall())
    own = sorted(e for e, kind in kinds.items() if kind in OWN_KINDS)
    imported = sorted(e for e, kind in kinds.items() if kind not in OWN_KINDS)
    said = bundled_night.outputs["import"]
    assert f"landed ASOS: {len(imported)} experiments; simulated: " in said
    assert f" in {len(own)} experiments (" in said and len(own) == 11  # 8 context experiments, 3 memory on/off runs
    assert f"ZCL context experiments (order, inclusion, memory mode): {len(own)}," in bundled_night.outputs["run"]


def test_the_run_says_where_the_html_report_and_the_ui_are(bundled_night):
    from resources import Warehouse

    path = report_path(Warehouse(path=str(bundled_night.warehouse)), BUNDLED_NIGHT)
    said = bundled_night.outputs["run"]
    assert f"the night's HTML report: {path}\n" in said and path.exists()
    assert "-> Catalog -> analysis_report (start there; DAGSTER_HOME=" in said


def test_what_needs_attention_comes_first_in_a_fixed_order(bundled_night):
    with duckdb.connect(str(bundled_night.warehouse), read_only=True) as con:
        views = load_views(con)
    # Groups in ATTENTION_ORDER, and within the decided group reject, adopt, no_effect, inconclusive, whatever the ids.
    groups = [ATTENTION_ORDER.index(v.attention) for v in views]
    assert groups == sorted(groups)
    for own in (True, False):
        decided = [DECIDED_ORDER.index(v.decision) for v in views if v.attention == "decided" and v.is_own == own]
        assert decided == sorted(decided) and len(set(decided)) >= 2
    said = bundled_night.outputs["run"]
    alarms = said.index("Alarms, most severe first")
    assert said.index("\u26a0 SRM mismatch (1): 26bd38", alarms) < said.index("\u26a0 guardrail breached (1): sim-ct-analysis-order",
                                                                             alarms) < said.index("\u26a0 stalled (", alarms)


def test_two_estimands_of_one_comparison_say_which_is_which(bundled_night, monkeypatch):
    said = " ".join(_report(bundled_night, monkeypatch, "--experiment", "sim-in-triage-memory").split())
    assert "treatment vs control (continuous mean, decides): difference" in said
    assert "treatment vs control (ratio of sums, reported beside): difference" in said


def test_an_earlier_look_prints_no_figure_of_a_later_night(bundled_night, monkeypatch):
    said = _report(bundled_night, monkeypatch, "--as-of", "2026-10-01")
    assert re.search(r"Latest look of \d+ experiments \(looks of 2026-\d\d-\d\d to 2026-10-01\)", said)
    for section in ("Exploration funnel (admissions", "Loop health, the last", "Experience Gain (primary metric"):
        assert section not in said, section
    # the latest look: an experiment is looked at on the nights it had data, so not always the night run
    assert re.search(r"describe the latest night, not the look of 2026-10-01 \(the latest look is of 2026-\d\d-\d\d\)",
                     " ".join(said.split()))
    latest = _report(bundled_night, monkeypatch)
    assert "Loop health, the last" in latest and "Exploration funnel (admissions" in latest


def test_the_first_runs_tables_of_days_list_months(bundled_night):
    """The bundled landing spans 139 days, which the first run loads as one range; each day's
    materialization carries the run's table of days, by month (zcl_assets.defs.metadata)."""
    import dagster as dg

    with dg.DagsterInstance.from_config(bundled_night.env["DAGSTER_HOME"]) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("raw_assignments"))
        metadata = event.asset_materialization.metadata
    months = [r.data for r in metadata["days"].value.records]
    assert [m["month"] for m in months] == ["2026-09", "2026-10"]  # assignments land 2026-09-01 to 2026-10-15
    assert sum(m["days"] for m in months) == metadata["days_loaded"].value == 45
