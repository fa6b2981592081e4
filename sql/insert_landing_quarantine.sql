INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at)
SELECT source_table, NULL, source_file, NULL, 'landing', rule, reason, NULL, current_timestamp FROM strays_batch
