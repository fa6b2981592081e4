INSERT INTO landing_manifest (table_name, partition_day, file_name, size_bytes, mtime_ns, row_count, loaded_at, staged_at)
SELECT $table, CAST($day AS DATE), file_name, size_bytes, mtime_ns, row_count, now(), NULL FROM manifest_batch
