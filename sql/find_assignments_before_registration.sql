SELECT c.partition_day, c.source_file, c.source_row,
       'assigned at ' || CAST(c.assigned_at AS VARCHAR) || ', before registration at '
       || CAST(e.registered_at AS VARCHAR) AS reason
FROM subject c JOIN staged_experiments e USING (experiment_id)
WHERE c.assigned_at < e.registered_at
