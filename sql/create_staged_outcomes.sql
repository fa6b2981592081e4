CREATE TABLE IF NOT EXISTS staged_outcomes (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    session_id VARCHAR NOT NULL, success BOOLEAN, time_minutes DOUBLE, tokens DOUBLE,
    score DOUBLE, recorded_at TIMESTAMPTZ NOT NULL, evaluator_id VARCHAR NOT NULL,
    evaluator_version VARCHAR NOT NULL, evaluator_kind VARCHAR NOT NULL
);
