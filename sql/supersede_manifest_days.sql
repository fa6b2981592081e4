UPDATE landing_manifest SET superseded_at = current_timestamp
WHERE table_name = $table AND superseded_at IS NULL AND partition_day IN (SELECT partition_day FROM days_batch)
