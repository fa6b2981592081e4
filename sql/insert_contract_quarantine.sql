-- Candidates that broke a row-level rule of the contract, with the record as landed.
INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at)
SELECT $table, partition_day, source_file, source_row, 'contract', __rule, __reason, __record, current_timestamp
FROM candidates WHERE __rule IS NOT NULL
ORDER BY partition_day, source_file, source_row
