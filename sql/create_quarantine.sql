CREATE TABLE IF NOT EXISTS quarantine (
    source_table   VARCHAR NOT NULL,
    partition_day  DATE,             -- null for rows quarantined by a cross-partition stage
    source_file    VARCHAR,
    source_row     BIGINT,
    stage          VARCHAR NOT NULL, -- 'contract' (per partition) or 'experience' (nightly)
    rule           VARCHAR NOT NULL,
    reason         VARCHAR NOT NULL,
    record         VARCHAR,
    quarantined_at TIMESTAMPTZ NOT NULL
);
