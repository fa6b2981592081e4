CREATE TABLE IF NOT EXISTS staged_experiments (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    experiment_id VARCHAR NOT NULL, org_id VARCHAR NOT NULL, task_type VARCHAR NOT NULL,
    kind VARCHAR NOT NULL, hypothesis VARCHAR NOT NULL, arms JSON NOT NULL,
    control_arm VARCHAR NOT NULL, primary_metric VARCHAR NOT NULL, direction VARCHAR NOT NULL,
    mde DOUBLE NOT NULL, alpha DOUBLE NOT NULL, power DOUBLE NOT NULL,
    baseline_mean DOUBLE NOT NULL, baseline_sd DOUBLE, min_samples_per_arm BIGINT NOT NULL,
    randomization_unit VARCHAR NOT NULL, sessions_per_unit VARCHAR NOT NULL,
    guardrails JSON NOT NULL, metric_caps JSON, expected_verified_share DOUBLE NOT NULL,
    registered_at TIMESTAMPTZ NOT NULL
);
