CREATE TABLE IF NOT EXISTS staged_sessions (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    session_id VARCHAR NOT NULL, org_id VARCHAR NOT NULL, user_id VARCHAR NOT NULL,
    task_type VARCHAR NOT NULL, model VARCHAR, budget DOUBLE,
    started_at TIMESTAMPTZ NOT NULL, ended_at TIMESTAMPTZ,
    context_doc_ids JSON, context_digest VARCHAR,
    experiment_id VARCHAR, delivered_arm VARCHAR, admission_id VARCHAR
);
