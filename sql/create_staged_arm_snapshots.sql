CREATE TABLE IF NOT EXISTS staged_arm_snapshots (
    partition_day DATE NOT NULL, source_file VARCHAR NOT NULL, source_row BIGINT NOT NULL,
    schema_version INTEGER NOT NULL,
    experiment_id VARCHAR NOT NULL, arm VARCHAR NOT NULL, metric VARCHAR NOT NULL,
    "at" TIMESTAMPTZ NOT NULL, n BIGINT NOT NULL, mean DOUBLE NOT NULL, variance DOUBLE
);
