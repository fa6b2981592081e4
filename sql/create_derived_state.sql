-- Per derived table: the fingerprint of its inputs (staged table versions and the code that
-- builds it) when it was last built; a run whose inputs match keeps the table as it is.
CREATE TABLE IF NOT EXISTS internal.derived_state (
    name VARCHAR PRIMARY KEY, fingerprint VARCHAR NOT NULL, built_at TIMESTAMPTZ NOT NULL
)
