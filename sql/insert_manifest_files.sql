INSERT INTO landing_manifest (table_name, partition_day, file_name, size_bytes, mtime_ns, sha256, archive_path, row_count, loaded_at)
SELECT $table, partition_day, file_name, size_bytes, mtime_ns, sha256, archive_path, row_count, current_timestamp FROM manifest_batch
