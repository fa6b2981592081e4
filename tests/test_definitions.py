"""The whole code location loads, with the assets, checks, jobs and schedule it promises."""


from zcl_assets.definitions import defs

TABLES = ["experiments", "experiment_events", "sessions", "assignments", "outcomes", "admission_events", "arm_snapshots"]


def test_code_location_loads_with_its_assets_checks_jobs_and_schedule():
    definitions = defs()
    graph = definitions.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    expected = {f"raw_{t}" for t in TABLES} | {f"staged_{t}" for t in TABLES}
    expected |= {"landing_inventory", "verification_records", "experience", "experiment_plans", "experiment_analysis",
                 "knowledge_records", "family_outlook", "segment_breakdowns"}
    expected |= {"admission_states", "funnel_stage_counts", "information_yield", "exploration_share",
                 "experience_gain_by_task", "experience_gain", "loop_health"}
    expected |= {"analysis_report", "experiment_report"}
    expected |= {"postgres_landing"}
    assert keys == expected

    checks = {(c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys}
    for table in TABLES:
        assert (f"staged_{table}", "row_conservation") in checks
    assert ("staged_assignments", "unique_session_experiment") in checks
    assert ("staged_assignments", "arm_in_declared_set") in checks
    assert ("staged_outcomes", "assignment_before_outcome") in checks
    assert ("experience", "assignment_conservation") in checks
    assert ("experiment_analysis", "sample_ratio") in checks

    assert {j.name for j in definitions.resolve_all_job_defs()} >= {"nightly_job", "ingest_job"}
    schedule = definitions.resolve_schedule_def("nightly_schedule")
    assert schedule.cron_schedule == "0 2 * * *"
    assert schedule.execution_timezone == "UTC"
    assert schedule.job_name == "nightly_job"
    assert definitions.resolve_sensor_def("landing_sensor").job_name == "ingest_job"
    # the PostgreSQL source lands before the night
    assert ("postgres_landing", "no_rows_deleted_at_source") in checks
    source = definitions.resolve_schedule_def("postgres_landing_schedule")
    assert (source.cron_schedule, source.execution_timezone, source.job_name) == ("30 1 * * *", "UTC", "postgres_landing_job")


def test_every_asset_has_group_kinds_and_description():
    graph = defs().resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name in {"sources", "landing", "staging", "experience", "analysis", "funnel", "reports"}, key
        assert node.kinds, key
        assert node.description, key


def test_every_check_is_evaluated_by_its_assets_own_step():
    # a check of its own would be a Dagster step of its own, which every night pays for (docs/performance.md)
    graph = defs().resolve_asset_graph()
    for key in graph.asset_check_keys:
        assert key in graph.assets_def_for_key(key.asset_key).check_keys, key  # the op of its asset evaluates it
    funnel = {(c.asset_key.to_user_string(), c.name) for c in graph.asset_check_keys if c.asset_key.path[-1] in
              {"admission_states", "exploration_share"}}
    assert funnel == {("admission_states", n) for n in ("admission_event_conservation", "launch_cap", "attempt_cap",
                                                         "arm_diversity", "stalled_admissions")} | {
        ("exploration_share", "exploration_rate")}
