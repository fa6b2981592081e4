CREATE TABLE IF NOT EXISTS raw_records (
    table_name    VARCHAR NOT NULL,
    partition_day DATE    NOT NULL,
    source_file   VARCHAR NOT NULL,
    source_row    BIGINT  NOT NULL,  -- 1-based line or row number within the file
    record        VARCHAR            -- the record as landed, as JSON text (may be malformed)
);
