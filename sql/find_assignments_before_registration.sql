SELECT c.row_index,
       'assigned at ' || CAST(c.assigned_at AS VARCHAR) || ', before registration at '
       || CAST(e.registered_at AS VARCHAR) AS reason
FROM candidate c JOIN staged_experiments e USING (experiment_id)
WHERE c.assigned_at < e.registered_at
