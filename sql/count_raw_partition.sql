SELECT count(*) FROM raw_records WHERE table_name = $table AND partition_day = CAST($day AS DATE)
