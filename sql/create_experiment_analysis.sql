CREATE TABLE IF NOT EXISTS experiment_analysis (
    as_of DATE NOT NULL, experiment_id VARCHAR NOT NULL, org_id VARCHAR, task_type VARCHAR,
    source VARCHAR, metric VARCHAR, is_primary BOOLEAN, direction VARCHAR, analysis_unit VARCHAR,
    control_arm VARCHAR, treatment_arm VARCHAR, n_control BIGINT, n_treatment BIGINT,
    successes_control BIGINT, successes_treatment BIGINT, mean_control DOUBLE, mean_treatment DOUBLE,
    variance_control DOUBLE, variance_treatment DOUBLE, difference DOUBLE, ci_low DOUBLE,
    ci_high DOUBLE, ci_method VARCHAR, p_value DOUBLE, p_method VARCHAR,
    interval_test_disagree BOOLEAN, mn_p_value DOUBLE, mn_ci_low DOUBLE, mn_ci_high DOUBLE,
    relative_lift DOUBLE, lift_ci_low DOUBLE, lift_ci_high DOUBLE, cs_low DOUBLE, cs_high DOUBLE,
    cs_p_value DOUBLE, planned_n_per_arm DOUBLE, n_fixed_per_arm DOUBLE, plan_reason VARCHAR,
    srm_units_control BIGINT, srm_units_treatment BIGINT, srm_chisquare_p DOUBLE,
    srm_sequential_p DOUBLE, analysed_at TIMESTAMPTZ NOT NULL
);
