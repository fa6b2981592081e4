CREATE TABLE IF NOT EXISTS landing_manifest (
    table_name    VARCHAR   NOT NULL,
    partition_day DATE      NOT NULL,
    file_name     VARCHAR   NOT NULL,
    size_bytes    BIGINT    NOT NULL,
    mtime_ns      BIGINT    NOT NULL,
    row_count     BIGINT    NOT NULL,
    loaded_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (table_name, partition_day, file_name)
);
