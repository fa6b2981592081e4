DELETE FROM landing_manifest WHERE table_name = $table AND partition_day = CAST($day AS DATE)
