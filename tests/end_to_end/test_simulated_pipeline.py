"""Simulated ZCL sessions (known effects, counted dirty rows) through the nightly job."""

import datetime as dt

import dagster as dg
import duckdb
import pytest

from contracts.tables import CONTRACTS
from tests.warehouse_checks import run_one_night
from zcl_assets.definitions import build_resources
from zcl_assets.defs.nightly import nightly_schedule
from zcl_assets.runner import run_night
from zcl_assets.simulation.sessions import simulate_sessions

# Simulator kind of dirty row -> (source table, stage, quarantine rule) it must produce.
DIRTY_TO_RULE = {
    "malformed_json": ("sessions", "contract", "malformed_record"),
    "unparseable_timestamp": ("sessions", "contract", "bad_type"),
    "missing_required_field": ("outcomes", "contract", "missing_field"),
    "negative_tokens": ("outcomes", "contract", "out_of_range"),
    "outcome_before_assignment": ("outcomes", "contract", "outcome_before_assignment"),
    "unknown_arm": ("assignments", "contract", "arm_not_declared"),
    "duplicate_assignment": ("assignments", "contract", "duplicate_key"),
    "delivered_arm_mismatch": ("assignments", "experience", "delivered_arm_mismatch"),
}


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim")
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    summary = simulate_sessions(landing, seed=20261129, start="2026-10-01", days=45)
    run_one_night(landing, warehouse, "2026-11-20")
    return summary, warehouse, landing


def test_every_dirty_row_is_quarantined_with_its_rule(simulated):
    summary, warehouse, _ = simulated
    with duckdb.connect(str(warehouse), read_only=True) as con:
        found = {
            (t, s, r): n
            for t, s, r, n in con.execute("SELECT source_table, stage, rule, count(*) FROM quarantine GROUP BY ALL").fetchall()
        }
    expected = {}
    for kind, count in summary.dirty_rows.items():
        expected[DIRTY_TO_RULE[kind]] = expected.get(DIRTY_TO_RULE[kind], 0) + count
    assert found == expected


def test_intervals_cover_the_true_effects(simulated):
    # Seeded: with the bundled seed every one of the 9 primary comparisons covers its true effect. A 95%
    # interval misses 5% of the time, so a change of seed could break one; this is a regression
    # test of the whole path (staging, verification, experience, aggregation, statistics).
    summary, warehouse, _ = simulated
    with duckdb.connect(str(warehouse), read_only=True) as con:
        # each experiment's latest look (a closed or stalled experiment has no look on the last night)
        rows = con.execute(
            "SELECT experiment_id, treatment_arm, difference, ci_low, ci_high, p_method FROM experiment_analysis "
            "WHERE is_primary QUALIFY as_of = max(as_of) OVER (PARTITION BY experiment_id)"
        ).fetchall()
    assert len(rows) == sum(len(v) for v in summary.true_effects.values())
    for experiment_id, arm, _difference, low, high, p_method in rows:
        truth = summary.true_effects[experiment_id][arm]
        assert low <= truth <= high, (experiment_id, arm, truth, low, high)
        unit = summary.experiments[experiment_id].randomization_unit
        metric = summary.experiments[experiment_id].primary_metric
        # user-randomized with several sessions a user: Welch on per-user means (the primary estimand)
        expected_test = "miettinen_nurminen_score" if metric == "success" and unit != "user" else "welch_t"
        assert p_method == expected_test


def test_only_authoritative_outcomes_enter_the_experience(simulated):
    _, warehouse, _ = simulated
    with duckdb.connect(str(warehouse), read_only=True) as con:
        kinds = dict(con.execute("SELECT evaluator_kind, count(*) FROM experience WHERE verified GROUP BY ALL").fetchall())
        kept = con.execute("SELECT count(*) FROM verification_records WHERE NOT authoritative").fetchone()[0]
    assert set(kinds) <= {"evaluator", "human"}
    assert kept > 0  # self-reports and heuristics are kept and counted, not used


def test_second_night_is_idempotent_and_the_schedule_plans_the_same_look(simulated, tmp_path):
    summary, warehouse, landing = simulated
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ZCL_LANDING_DIR", str(landing))
        mp.setenv("ZCL_WAREHOUSE", str(warehouse))
        resources = build_resources()
        (tmp_path / "home").mkdir()
        with dg.DagsterInstance.local_temp(tempdir=str(tmp_path / "home")) as schedule_instance:  # persistent: the schedule reads its partitions
            # closed here: the instance the context opens from its ref sets the process's definitions state
            # storage, and a context left to the garbage collector would reset it later, in another test, to
            # this instance's storage once the instance is gone ("undefined DagsterInstance weakref")
            with dg.build_schedule_context(
                instance=schedule_instance, resources=resources,
                scheduled_execution_time=dt.datetime(2026, 11, 21, 2, 0, tzinfo=dt.timezone.utc),
            ) as context:
                requests = list(nightly_schedule(context))
        # Nothing changed since the night ran: one request, the look only, as of the previous day.
        assert len(requests) == 1
        assert requests[0].run_config == {"ops": {"experiment_analysis": {"config": {"as_of": "2026-11-20"}}}}
        assert {k.path[-1] for k in requests[0].asset_selection}.isdisjoint({f"raw_{t}" for t in CONTRACTS})
        # ... and leaves out the derived tables whose inputs did not change (they have nothing to read)
        assert {k.path[-1] for k in requests[0].asset_selection}.isdisjoint({"experience", "verification_records"})
        assert {"experiment_analysis", "analysis_report"} <= {k.path[-1] for k in requests[0].asset_selection}
        with duckdb.connect(str(warehouse), read_only=True) as con:
            before = con.execute("SELECT count(*) FROM experiment_analysis").fetchone()[0]
        with dg.DagsterInstance.ephemeral() as instance:
            results = run_night(instance, "2026-11-20")
        assert [r.success for r in results] == [True]
        with duckdb.connect(str(warehouse), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM experiment_analysis").fetchone()[0] == before


def test_a_quiet_night_leaves_out_what_has_nothing_to_read_and_what_reads_it_runs_again(simulated, tmp_path):
    import shutil

    from zcl_assets.defs.nightly import idle_assets
    from zcl_assets.funnel.budgets import load_budgets
    from zcl_assets.funnel.build import exploration_share_pending
    from zcl_assets.warehouse import DuckDBWarehouse

    _, warehouse, landing = simulated
    # Experience Gain is never left out: its claims follow the decisions of tonight's look.
    derived = {dg.AssetKey(k) for k in ("verification_records", "experience", "loop_health", "admission_states",
                                         "funnel_stage_counts", "information_yield", "exploration_share")}
    # After the night every consumer's cursor is at the end of the change log, under the code's fingerprints.
    assert idle_assets(DuckDBWarehouse(path=str(warehouse))) == derived
    # the landing inventory is left out while the landing's stray files are those it recorded (none here)
    strays = build_resources(landing_dir=str(landing))["landing"].stray_files()
    assert strays == []
    assert idle_assets(DuckDBWarehouse(path=str(warehouse)), strays) == derived | {dg.AssetKey("landing_inventory")}
    stray = [("", "notes.txt", "unknown_table", "not a table folder")]
    assert idle_assets(DuckDBWarehouse(path=str(warehouse)), stray) == derived
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(warehouse, copy)
    with duckdb.connect(str(copy)) as con:  # as after a change of the experience's rules (a new fingerprint)
        con.execute("UPDATE internal.change_cursors SET fingerprint = 'older rules' WHERE consumer = 'experience'")
    # experience rebuilds; loop health and the funnel read sessions, verification records and the ledger only.
    assert idle_assets(DuckDBWarehouse(path=str(copy))) == derived - {dg.AssetKey("experience")}
    with duckdb.connect(str(copy)) as con:  # as after a change of the packaged caps (the funnel's fingerprint)
        con.execute("UPDATE internal.change_cursors SET fingerprint = 'other caps' WHERE consumer = 'funnel'")
    assert idle_assets(DuckDBWarehouse(path=str(copy))) == derived - {dg.AssetKey(k) for k in (
        "experience", "admission_states", "funnel_stage_counts", "information_yield")}
    with duckdb.connect(str(copy)) as con:  # a stored share its counts do not give: other ranges, other code, or
        con.execute("UPDATE exploration_share SET rate_high = rate_high / 2")  # a build stopped after the counts
    assert idle_assets(DuckDBWarehouse(path=str(copy))) == {dg.AssetKey(k) for k in ("verification_records", "loop_health")}
    # and the landing inventory or any derived asset runs while its last planned materialization did not happen
    assert idle_assets(DuckDBWarehouse(path=str(warehouse)), strays, {dg.AssetKey("information_yield")}) == derived - {
        dg.AssetKey(k) for k in ("admission_states", "funnel_stage_counts", "information_yield")} | {dg.AssetKey("landing_inventory")}
    assert idle_assets(DuckDBWarehouse(path=str(warehouse)), strays, {dg.AssetKey("landing_inventory")}) == derived
    wider = tmp_path / "budgets.yaml"  # other budgets give other ranges: the stored share is not theirs
    wider.write_text("defaults:\n  exploration_cap: 0.9\n", encoding="utf-8")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert not exploration_share_pending(con, load_budgets())
        assert exploration_share_pending(con, load_budgets(wider))
    with duckdb.connect(str(copy)) as con:  # as after a night killed between staging an outcome and its records
        con.execute("INSERT INTO internal.change_log SELECT nextval('internal.change_seq'), 'staged_outcomes', NULL, "
                    "session_id, NULL FROM staged_outcomes LIMIT 1")
    assert idle_assets(DuckDBWarehouse(path=str(copy))) == set()
    assert idle_assets(DuckDBWarehouse(path=str(tmp_path / "none.duckdb"))) == set()
