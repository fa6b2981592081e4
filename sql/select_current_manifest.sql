SELECT CAST(partition_day AS VARCHAR), file_name, size_bytes, mtime_ns, sha256
FROM landing_manifest WHERE table_name = $table AND superseded_at IS NULL
