CREATE TABLE IF NOT EXISTS staged_experiment_events (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    experiment_id VARCHAR NOT NULL, status VARCHAR NOT NULL, "at" TIMESTAMPTZ NOT NULL,
    reason VARCHAR, allocation JSON
);
