-- The current archived files of the days of a table waiting to be staged.
SELECT CAST(m.partition_day AS VARCHAR), m.file_name, m.archive_path
FROM landing_manifest m JOIN internal.pending_days p ON p.table_name = m.table_name AND p.partition_day = m.partition_day
WHERE m.table_name = $table AND m.superseded_at IS NULL
ORDER BY m.partition_day, m.file_name
