CREATE TABLE IF NOT EXISTS staged_admission_events (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    admission_id VARCHAR NOT NULL, org_id VARCHAR NOT NULL, task_type VARCHAR NOT NULL,
    state VARCHAR NOT NULL, "at" TIMESTAMPTZ NOT NULL, arm VARCHAR, session_id VARCHAR,
    outcome VARCHAR
);
