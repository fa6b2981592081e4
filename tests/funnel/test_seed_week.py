"""Seed note 001's week replayed through the nightly job: the funnel reports exactly the note's counts."""

import dagster as dg
import duckdb
import pytest

from tests.warehouse_checks import run_one_night
from zcl_assets.simulation.admissions import write_seed_week

# Seed note 001: "Thirty-two admissions produced thirteen launches and one useful observation."
# The rest of the week as written in zcl_assets/simulation/admissions.py: 6 admissions never
# consumed, 5 consumed but never launched, 8 blocked after consumption (26 consumed); the
# 13 launches ended 1 productive, 8 unproductive, 4 failed.
EXPECTED_STAGES = {
    ("admitted", None): 32, ("consumed", None): 26, ("launched", None): 13, ("blocked", None): 8,
    ("terminal", "productive"): 1, ("terminal", "unproductive"): 8, ("terminal", "failed"): 4,
}


def _checks(results) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for r in results for e in r.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def seed_week(tmp_path_factory):
    root = tmp_path_factory.mktemp("seed-week")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    write_seed_week(landing, start="2026-09-01")
    with dg.DagsterInstance.ephemeral() as instance:
        first = run_one_night(landing, warehouse, "2026-09-08", instance)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            counts_first = con.execute("SELECT * FROM funnel_stage_counts ORDER BY ALL").fetchall()
        # land the same files again and run the night again: nothing doubles
        write_seed_week(landing, start="2026-09-01")
        run_one_night(landing, warehouse, "2026-09-08", instance)
    return warehouse, first, counts_first


def test_counts_per_stage_are_the_notes(seed_week):
    warehouse, _, _ = seed_week
    with duckdb.connect(str(warehouse), read_only=True) as con:
        found = {(s, o): n for s, o, n in con.execute(
            "SELECT stage, outcome, sum(admissions) FROM funnel_stage_counts GROUP BY ALL").fetchall()}
        days = con.execute("SELECT count(DISTINCT day) FROM funnel_stage_counts WHERE stage = 'admitted'").fetchone()[0]
        y = con.execute(
            "SELECT admissions, launched, productive, yield_per_admission, yield_per_launch FROM information_yield "
            "WHERE task_type = '(all)'"
        ).fetchone()
        stalled = con.execute("SELECT state, count(*) FROM admission_states WHERE stalled GROUP BY ALL ORDER BY ALL").fetchall()
    assert found == EXPECTED_STAGES
    assert days == 7
    assert y == (32, 13, 1, pytest.approx(1 / 32), pytest.approx(1 / 13))
    # every admission left admitted or consumed is stalled at the ledger's end (1 hour default)
    assert stalled == [("admitted", 6), ("consumed", 5)]


def test_materializing_again_does_not_double_the_counts(seed_week):
    warehouse, _, counts_first = seed_week
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT * FROM funnel_stage_counts ORDER BY ALL").fetchall() == counts_first
        assert con.execute("SELECT count(*) FROM admission_states").fetchone()[0] == 32
        assert con.execute("SELECT count(*) FROM staged_admission_events").fetchone()[0] == 92


def test_the_attempt_cap_check_says_four_a_day_cannot_hold_32_in_seven_days(seed_week):
    _, results, _ = seed_week
    checks = _checks(results)
    attempt = checks["attempt_cap"]
    assert not attempt.passed and attempt.severity == dg.AssetCheckSeverity.WARN
    assert attempt.description == (
        "fabrikam: 32 admissions in 7 days (2026-09-01..2026-09-07) at 4 a day need at least 8 days, not 7"
    )
    # days of 5, 6 and 5 admissions: 1 + 2 + 1 admissions beyond the cap
    assert attempt.metadata["days_over_cap"].value == 3
    assert attempt.metadata["admissions_over_cap"].value == 4
    # launches were at most 3 a day: the launch cap (4) holds
    assert checks["launch_cap"].passed
    # the dead arm was tried again each day before the other arms: arm diversity warns
    assert not checks["arm_diversity"].passed and checks["arm_diversity"].metadata["repeats"].value == 4
    assert not checks["stalled_admissions"].passed and checks["stalled_admissions"].metadata["stalled"].value == 11
    assert checks["admission_event_conservation"].passed
    # warnings never stop the run
    assert all(r.success for r in results)


def test_the_report_shows_the_funnel(seed_week):
    from zcl_assets.reports.funnel import funnel_section, render_funnel_section

    warehouse, _, _ = seed_week
    with duckdb.connect(str(warehouse), read_only=True) as con:
        section = funnel_section(con)
    stages = {r["stage"]: r["admissions"] for r in section["stages"]["fabrikam"]}
    assert stages["admitted"] == 32 and stages["launched"] == 13 and stages["terminal: productive"] == 1
    text = render_funnel_section(section)
    assert "information yield 0.0312 per admission, 0.0769 per launch" in text
    assert "fabrikam 2026-09-03: 6 attempts, cap 4" in text


def test_the_ui_gets_a_stage_table_with_a_schema_a_chart_and_the_yield(seed_week):
    _, results, _ = seed_week
    materialized = {
        e.asset_key.to_user_string(): e.materialization.metadata
        for r in results for e in r.get_asset_materialization_events()
    }
    stages = materialized["funnel_stage_counts"]
    table = stages["counts_per_stage"]
    assert isinstance(table, dg.TableMetadataValue)
    assert [c.name for c in table.schema.columns] == ["org_id", "stage", "admissions", "share_of_admitted"]
    assert {r.data["stage"]: r.data["admissions"] for r in table.records}["launched"] == 13
    assert "terminal: productive" in stages["chart"].value and stages["fabrikam/admitted"].value == 32
    yields = materialized["information_yield"]
    assert yields["fabrikam/yield_per_admission"].value == pytest.approx(1 / 32)
    assert yields["fabrikam/yield_per_launch"].value == pytest.approx(1 / 13)
    assert materialized["admission_states"]["dagster/row_count"].value == 32
