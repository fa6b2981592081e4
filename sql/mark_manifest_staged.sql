UPDATE landing_manifest SET staged_at = now()
WHERE table_name = $table AND partition_day = CAST($day AS DATE)
