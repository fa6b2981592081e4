-- What changed: one row per key whose rows changed in a table, under the sequence number of
-- the pass that changed it (experiment_id, session_id: the keys a derived table looks its
-- rows up by, NULL when the source has none; day: the landing day of the changed row, or for
-- the experience table the UTC day of the assignment). Tables derived from the source read the
-- rows after their cursor (internal.change_cursors) and rebuild only what those keys touch.
CREATE TABLE IF NOT EXISTS internal.change_log (
    seq BIGINT NOT NULL, source VARCHAR NOT NULL, experiment_id VARCHAR, session_id VARCHAR, day DATE
)
