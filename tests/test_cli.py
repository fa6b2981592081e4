"""The `zcl` command as a user types it: clear errors, and exit codes that say what happened."""

import json

import pytest
from click.testing import CliRunner

from zcl_assets.cli import main
from zcl_assets.paths import project_root

PROJECT_HOME = project_root() / "dagster_home"


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("ZCL_LANDING_DIR", str(tmp_path / "landing"))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(tmp_path / "warehouse.duckdb"))
    return tmp_path


def test_an_impossible_date_says_why(cli_env):
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-13-01"])
    assert result.exit_code == 2
    assert "'2026-13-01' is not a date of the form YYYY-MM-DD" in result.output
    assert "month must be in 1..12" in result.output


def test_a_day_that_has_not_begun_is_refused(cli_env):
    result = CliRunner().invoke(main, ["run", "--as-of", "2999-01-01"])
    assert result.exit_code == 2
    assert "2999-01-01 has not begun yet" in result.output
    assert not (cli_env / "warehouse.duckdb").exists()  # nothing ran


def test_a_landing_without_experiments_is_a_successful_night(cli_env):
    day = cli_env / "landing" / "sessions" / "2026-10-01"
    day.mkdir(parents=True)
    (day / "s.jsonl").write_text(json.dumps({
        "schema_version": 1, "session_id": "s1", "org_id": "o", "user_id": "u", "task_type": "t",
        "started_at": "2026-10-01T10:00:00+00:00"}) + "\n")
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])
    assert result.exit_code == 0, result.output
    assert "no experiment is registered yet" in result.output


@pytest.mark.parametrize("value", ["banana", "1GB'; DROP TABLE quarantine; --", "12"])
def test_a_memory_limit_that_is_not_a_size_is_refused_before_the_run(cli_env, monkeypatch, value):
    monkeypatch.setenv("ZCL_DUCKDB_MEMORY_LIMIT", value)
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])
    assert result.exit_code == 1
    assert "ZCL_DUCKDB_MEMORY_LIMIT" in result.output and "is not a DuckDB memory size" in result.output
    assert not (cli_env / "warehouse.duckdb").exists()  # nothing was run


def test_an_unknown_engine_is_refused_before_the_run(cli_env, monkeypatch):
    monkeypatch.setenv("ZCL_ENGINE", "oracle")
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])
    assert result.exit_code == 1
    assert "engine 'oracle' is not one of duckdb, spark" in result.output
    assert not (cli_env / "warehouse.duckdb").exists()  # nothing was run
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02", "--engine", "oracle"])
    assert result.exit_code == 2 and "'oracle' is not one of 'duckdb', 'spark'" in result.output


def test_a_memory_limit_given_as_a_size_is_used(cli_env, monkeypatch):
    monkeypatch.setenv("ZCL_DUCKDB_MEMORY_LIMIT", "300MB")
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])
    assert result.exit_code == 0, result.output
    from zcl_assets.definitions import build_resources

    with build_resources()["warehouse"].connect(read_only=True) as con:
        assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] in {"286.1 MiB", "300.0 MB"}


def _session(session_id, user_id, day="2026-10-01"):
    return json.dumps({"schema_version": 1, "session_id": session_id, "org_id": "o", "user_id": user_id, "task_type": "t",
                       "started_at": f"{day}T10:00:00+00:00"}) + "\n"


def test_a_run_says_how_many_rows_it_staged_and_quarantined_by_rule(cli_env):
    first = cli_env / "landing" / "sessions" / "2026-10-01"
    first.mkdir(parents=True)
    # two good sessions, one whose user_id is a number (bad_type), one without a session_id (missing_field)
    (first / "s.jsonl").write_text(_session("s1", "u1") + _session("s2", "u2") + _session("s3", 7)
                                   + json.dumps({"schema_version": 1, "org_id": "o", "user_id": "u", "task_type": "t",
                                                 "started_at": "2026-10-01T11:00:00+00:00"}) + "\n")
    misplaced = cli_env / "landing" / "sessions" / "yesterday"  # not a date: the file is not read
    misplaced.mkdir()
    (misplaced / "s.jsonl").write_text(_session("s9", "u9"))
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])
    assert result.exit_code == 0, result.output
    assert "  sessions: 2 (+2) staged; 2 (+2) quarantined: bad_type 1 (+1), missing_field 1 (+1)\n" \
        "    files not read (their rows are in no count above): 1 (+1): bad_landing_path 1 (+1)\n" in result.output

    second = cli_env / "landing" / "sessions" / "2026-10-02"
    second.mkdir(parents=True)
    (second / "s.jsonl").write_text(_session("s4", "u4", day="2026-10-02"))
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-03"])
    assert result.exit_code == 0, result.output
    # the new day staged one row; the quarantine did not change, and every rule is still listed
    assert "  sessions: 3 (+1) staged; 2 quarantined: bad_type 1, missing_field 1\n" \
        "    files not read (their rows are in no count above): 1: bad_landing_path 1\n" in result.output


def _runs(home) -> list[str]:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        return [r.job_name for r in instance.get_runs()]


def test_a_run_on_another_warehouse_uses_its_own_instance_beside_it(cli_env, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME")
    other = cli_env / "elsewhere" / "other.duckdb"
    result = CliRunner().invoke(main, ["--warehouse", str(other), "run", "--as-of", "2026-10-02"])
    assert result.exit_code == 0, result.output
    home = cli_env / "elsewhere" / "other_dagster_home"
    assert (home / "dagster.yaml").read_text() == (PROJECT_HOME / "dagster.yaml").read_text()
    assert (home / "zcl_warehouse").read_text().strip() == "../other.duckdb"
    assert _runs(home) == ["nightly_job"]
    assert f"zcl --warehouse {other} ui" in result.output


def test_an_instance_that_serves_one_warehouse_refuses_a_run_on_another(cli_env, monkeypatch):
    first = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])  # claims the instance for warehouse.duckdb
    assert first.exit_code == 0, first.output
    other = cli_env / "other.duckdb"
    second = CliRunner().invoke(main, ["--warehouse", str(other), "run", "--as-of", "2026-10-02"])
    assert second.exit_code == 1
    said = " ".join(second.output.split())
    assert f"records the runs on the warehouse {cli_env / 'warehouse.duckdb'}, and this run is on {other}" in said
    assert f"Unset DAGSTER_HOME to use the instance of other.duckdb ({cli_env / 'other_dagster_home'})" in said
    assert not other.exists() and _runs(cli_env / "dagster_home") == ["nightly_job"]  # nothing ran, nothing recorded
    ui = CliRunner().invoke(main, ["--warehouse", str(other), "ui"])  # nor does the UI open on it (make dev)
    assert ui.exit_code == 1 and "records the runs on the warehouse" in ui.output


def test_the_default_warehouse_uses_the_projects_instance_as_make_dev_does(tmp_path, monkeypatch):
    root = tmp_path / "project"  # a project root of its own (ZCL_HOME), so the checkout's instance is not touched
    (root / "dagster_home").mkdir(parents=True)
    (root / "dagster_home" / "dagster.yaml").write_text((PROJECT_HOME / "dagster.yaml").read_text())
    monkeypatch.setenv("ZCL_HOME", str(root))
    for name in ("DAGSTER_HOME", "ZCL_WAREHOUSE", "ZCL_LANDING_DIR"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, ["run", "--as-of", "2026-10-02"])
    assert result.exit_code == 0, result.output
    assert (root / "dagster_home" / "zcl_warehouse").read_text().strip() == "../data/warehouse.duckdb"
    assert _runs(root / "dagster_home") == ["nightly_job"]
    assert "the Dagster UI: make dev," in result.output
