-- Every landed file ever loaded, append-only: a day's rows are superseded (never deleted)
-- when its files change. The current files are those with superseded_at IS NULL.
CREATE TABLE IF NOT EXISTS landing_manifest (
    table_name    VARCHAR     NOT NULL,
    partition_day DATE        NOT NULL,
    file_name     VARCHAR     NOT NULL,
    size_bytes    BIGINT      NOT NULL,
    mtime_ns      BIGINT      NOT NULL,
    sha256        VARCHAR     NOT NULL,
    archive_path  VARCHAR     NOT NULL,  -- the archived copy that staging read
    row_count     BIGINT      NOT NULL,  -- raw rows as the readers see them
    loaded_at     TIMESTAMPTZ NOT NULL,
    superseded_at TIMESTAMPTZ
)
