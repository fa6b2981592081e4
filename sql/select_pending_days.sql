SELECT DISTINCT CAST(partition_day AS VARCHAR) FROM internal.pending_days WHERE table_name = $table ORDER BY 1
