-- Per staged table: a version that grows whenever its rows change, and the versions of the
-- tables its cross-row rules read, as of its last staging (a change there re-checks it).
CREATE TABLE IF NOT EXISTS internal.staging_state (
    table_name VARCHAR PRIMARY KEY, version BIGINT NOT NULL, checked_against VARCHAR NOT NULL
)
