INSERT INTO internal.pending_days
SELECT DISTINCT $table, q.partition_day FROM queued_batch q
WHERE NOT EXISTS (SELECT 1 FROM internal.pending_days p WHERE p.table_name = $table AND p.partition_day = q.partition_day)
