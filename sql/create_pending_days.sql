-- Days loaded into the archive and not yet staged (a day counts as loaded once staged).
CREATE TABLE IF NOT EXISTS internal.pending_days (table_name VARCHAR NOT NULL, partition_day DATE NOT NULL)
