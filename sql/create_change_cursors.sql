-- Per derived table (a consumer of the change log): the last sequence number it has read,
-- and the fingerprint of the code that built it; another fingerprint means a full rebuild.
CREATE TABLE IF NOT EXISTS internal.change_cursors (
    consumer VARCHAR PRIMARY KEY, seq BIGINT NOT NULL, fingerprint VARCHAR NOT NULL
)
