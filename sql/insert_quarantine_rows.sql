INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at)
SELECT $table, CAST($day AS DATE), source_file, source_row, 'contract', rule, reason, record, now()
FROM quarantine_batch
