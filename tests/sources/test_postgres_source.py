"""The PostgreSQL source, part by part, against a real server: the registration file's defaults and
refusals, outcomes with no evaluator, other table names, streaming in small batches, the asset in
Dagster and what a person reads."""

import datetime as dt

import dagster as dg
import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

from resources import LandingStore
from resources.postgres import PostgresSource
from tests.sources import zcl_world as world
from tests.sources.postgres_server import execute_script
from tests.warehouse_checks import run_one_night
from zcl_assets.cli import main
from zcl_assets.defs.sources.assets import postgres_landing
from zcl_assets.importers.ab_export import AbExportOptions
from zcl_assets.sources import postgres
from zcl_assets.sources.config import SourceConfig, load_config
from zcl_assets.sources.sync import sync_postgres

SEED = 11


@pytest.fixture
def week(zcl_db):
    world.insert(zcl_db, "zcl_experiments", world.experiments(SEED))
    world.insert_days(zcl_db, SEED, range(0, 2))
    return zcl_db


def _landed(landing, table):
    return pl.concat([pl.read_parquet(p) for p in sorted((landing / table).glob("*/*.parquet"))])


def test_registrations_take_the_export_importers_defaults_and_the_schemas_unit(week, tmp_path):
    sync_postgres(week, tmp_path / "landing", tmp_path / "state", SourceConfig())
    registrations = _landed(tmp_path / "landing", "experiments").sort("registered_at")
    export = AbExportOptions(experiment_id="x")
    first = registrations.row(0, named=True)
    assert (first["mde"], first["alpha"], first["power"], first["baseline_mean"], first["min_samples_per_arm"], first["org_id"]) == (
        export.mde, export.alpha, export.power, export.baseline_mean, export.min_samples_per_arm, export.org_id)
    assert (first["randomization_unit"], first["sessions_per_unit"], first["primary_metric"], first["kind"]) == (
        "session", "many", "success", "other")
    source = world.experiments(SEED)[0]
    assert first["experiment_id"] == source["id"] and first["registered_at"] == source["started_at"]
    assert first["hypothesis"] == source["hypothesis"]
    assert first["arms"] == ('[{"name":"control","payload":{"variant":"baseline"},"allocation":0.5},'
                             '{"name":"treatment","payload":{"include":"docs/architecture.md","variant":0},"allocation":0.5}]')


def test_a_refused_registration_is_said_and_stops_no_other(week, tmp_path):
    ids = [e["id"] for e in world.experiments(SEED)]
    config_file = tmp_path / "postgres.yaml"
    config_file.write_text(f"experiments:\n  {ids[1]}: {{mde: -0.1}}\n  {ids[2]}: {{allocation: {{control: 0.3, other: 0.7}}}}\n")
    summary = sync_postgres(week, tmp_path / "landing", tmp_path / "state", load_config(config_file))
    assert sorted(summary.refused) == sorted(ids[1:3])
    assert "mde" in summary.refused[ids[1]] and "not declared" in summary.refused[ids[2]]
    assert set(_landed(tmp_path / "landing", "experiments").get_column("experiment_id")) == {ids[0], *ids[3:]}
    # their assignments still land, for the pipeline to quarantine as unknown_experiment
    assert set(_landed(tmp_path / "landing", "assignments").get_column("experiment_id")) == set(ids)


@pytest.mark.parametrize("text, message", [
    ("lookback: 3\n", "unknown key(s) ['lookback']"),
    ("registration: {mdee: 0.1}\n", "unknown key(s) ['mdee']"),
    ("tables: {sessions: 'zcl; DROP TABLE x'}\n", "not a plain SQL identifier"),
    ("evaluators: {'*': {id: a, version: '1', kind: oracle}}\n", "kind 'oracle' is not one of"),
    ("lookback_hours: -1\n", "lookback_hours must be 0 or more"),
])
def test_a_bad_registration_file_is_refused_with_the_reason(tmp_path, text, message):
    path = tmp_path / "postgres.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match="postgres.yaml") as error:
        load_config(path)
    assert message in str(error.value)


def test_outcomes_without_an_evaluator_land_as_unknown_and_the_report_says_they_do_not_count(week, tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse.duckdb"
    sync_postgres(week, landing, tmp_path / "state", SourceConfig())
    outcomes = _landed(landing, "outcomes")
    assert set(outcomes.select("evaluator_id", "evaluator_version", "evaluator_kind").unique().rows()) == {
        ("unknown", "unknown", "unknown")}
    run_one_night(landing, warehouse, "2026-11-03")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT DISTINCT evaluator_kind, authoritative FROM verification_records").fetchall() == [
            ("unknown", False)]
        per_experiment = dict(con.execute("SELECT experiment_id, count(*) FILTER (WHERE outcomes > 0) FROM experience "
                                          "GROUP BY ALL").fetchall())
    first = world.experiments(SEED)[0]["id"]
    shown = CliRunner().invoke(main, ["--warehouse", str(warehouse), "report", "--experiment", first]).output
    assert "0 of" in shown and "assigned sessions verified" in shown
    assert f"not counted by the evaluation contract, sessions with outcomes of kind unknown {per_experiment[first]}" in " ".join(
        shown.split())


def test_the_same_shape_under_other_table_names_lands_the_same_files(week, tmp_path):
    sync_postgres(week, tmp_path / "a" / "landing", tmp_path / "a" / "state", SourceConfig())
    execute_script(week, "CREATE SCHEMA ops; ALTER TABLE zcl_sessions SET SCHEMA ops; ALTER TABLE zcl_outcomes SET SCHEMA ops; "
                         "ALTER TABLE zcl_experiments SET SCHEMA ops; ALTER TABLE zcl_experiment_assignments SET SCHEMA ops; "
                         "ALTER TABLE ops.zcl_sessions RENAME TO sessions; ALTER TABLE ops.zcl_outcomes RENAME TO outcomes; "
                         "ALTER TABLE ops.zcl_experiments RENAME TO experiments; "
                         "ALTER TABLE ops.zcl_experiment_assignments RENAME TO assignments")
    config = tmp_path / "postgres.yaml"
    config.write_text("schema: ops\ntables: {sessions: sessions, outcomes: outcomes, experiments: experiments, "
                      "assignments: assignments}\n")
    sync_postgres(week, tmp_path / "b" / "landing", tmp_path / "b" / "state", load_config(config))
    a, b = tmp_path / "a" / "landing", tmp_path / "b" / "landing"
    assert {p.relative_to(a): p.read_bytes() for p in a.rglob("*.parquet")} == {
        p.relative_to(b): p.read_bytes() for p in b.rglob("*.parquet")}


def test_small_batches_give_each_day_once_whole_and_in_order(week):
    days = [dt.date(2026, 11, 2), dt.date(2026, 11, 3)]
    with postgres.snapshot(week) as cur:
        small = list(postgres.stream_days(cur, SourceConfig(), "assignments", days, batch_bytes=512))
        whole = list(postgres.stream_days(cur, SourceConfig(), "assignments", days))
    assert [d for d, _ in small] == days
    assert all(a.equals(b) for (_, a), (_, b) in zip(small, whole, strict=True))
    expected = sorted(r["id"] for r in world.day_rows(SEED, 0)["zcl_experiment_assignments"])
    assert small[0][1].get_column("source_id").to_list() == expected


def test_the_asset_lands_the_source_and_warns_of_rows_deleted_there(week, tmp_path):
    resources = {"postgres": PostgresSource(uri=week, state_dir=str(tmp_path / "state")),
                 "landing": LandingStore(root=str(tmp_path / "landing"))}
    first = dg.materialize([postgres_landing], resources=resources)
    assert first.success and first.get_asset_check_evaluations()[0].passed
    gone = world.day_rows(SEED, 1)["zcl_sessions"][3]["id"]
    execute_script(week, f"DELETE FROM zcl_sessions WHERE id = '{gone}'")
    second = dg.materialize([postgres_landing], resources=resources)
    (check,) = second.get_asset_check_evaluations()
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert gone in str(check.metadata["deleted"].value)
    metadata = second.asset_materializations_for_node("postgres_landing")[0].metadata
    assert metadata["rows_deleted"].value >= 2 and metadata["run"].value == 2


def test_a_server_that_cannot_be_reached_is_said_without_the_password(tmp_path):
    with pytest.raises(ConnectionError) as error:
        sync_postgres("postgresql://reader:s3cret@127.0.0.1:1/zcl", tmp_path / "landing", tmp_path / "state", SourceConfig())
    assert "reader:***@127.0.0.1:1/zcl" in str(error.value) and "s3cret" not in str(error.value)
    assert not (tmp_path / "landing").exists()


def test_zcl_import_postgres_says_what_changed_and_which_rows_were_deleted(week, tmp_path, monkeypatch):
    args = ["--landing-dir", str(tmp_path / "landing"), "import", "postgres", "--state-dir", str(tmp_path / "state")]
    monkeypatch.delenv("ZCL_POSTGRES_URI", raising=False)
    missing = CliRunner().invoke(main, args)
    assert missing.exit_code == 1 and "set ZCL_POSTGRES_URI=" in missing.output
    monkeypatch.setenv("ZCL_POSTGRES_URI", week)
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    assert "run 1 (every day reconciled): 5 registrations" in first.output
    assert "assignments: 120 rows added, 0 updated, 0 deleted at the source, in 2 days" in first.output
    gone = world.day_rows(SEED, 0)["zcl_experiment_assignments"][8]["id"]
    execute_script(week, f"DELETE FROM zcl_experiment_assignments WHERE id = '{gone}'")
    second = CliRunner().invoke(main, [*args, "--incremental"])
    assert second.exit_code == 0, second.output
    assert "run 2 (incremental)" in second.output
    assert f"assignments 2026-11-02: 0 updated, 1 deleted\n      deleted source rows: {gone}\n" in second.output


def test_a_changed_registration_file_relands_every_day_it_shapes_even_incrementally(week, tmp_path):
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text("lookback_hours: 0\n")
    after.write_text("lookback_hours: 0\nevaluators: {code_review: {id: unit-tests, version: '2.1', kind: evaluator}}\n")
    landing, state = tmp_path / "landing", tmp_path / "state"
    sync_postgres(week, landing, state, load_config(before))
    summary = sync_postgres(week, landing, state, load_config(after), reconcile=False)
    assert summary.windows["outcomes"] == "all" and summary.windows["sessions"] == "2026-11-03"  # the watermark's day
    assert set(_landed(landing, "outcomes").get_column("evaluator_kind")) == {"evaluator"}
    sync_postgres(week, tmp_path / "fresh", tmp_path / "fresh-state", load_config(after))
    assert {p.relative_to(landing): p.read_bytes() for p in landing.rglob("*.parquet")} == {
        p.relative_to(tmp_path / "fresh"): p.read_bytes() for p in (tmp_path / "fresh").rglob("*.parquet")}
    assert summary.total("updated") == _landed(landing, "outcomes").height  # every outcome relanded, none else
