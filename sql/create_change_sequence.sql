-- The sequence numbers of the change log: one per pass that changed a table, never reused.
CREATE SEQUENCE IF NOT EXISTS internal.change_seq START 1
