CREATE TABLE IF NOT EXISTS staged_assignments (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    session_id VARCHAR NOT NULL, experiment_id VARCHAR NOT NULL, arm VARCHAR NOT NULL,
    unit_id VARCHAR NOT NULL, assigned_at TIMESTAMPTZ NOT NULL
);
