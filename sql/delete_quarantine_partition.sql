DELETE FROM quarantine
WHERE source_table = $table AND partition_day = CAST($day AS DATE) AND stage = 'contract'
