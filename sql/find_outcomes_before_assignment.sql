SELECT c.row_index,
       'recorded at ' || CAST(c.recorded_at AS VARCHAR) || ', before its assignment at '
       || CAST(min(a.assigned_at) AS VARCHAR) AS reason
FROM candidate c JOIN staged_assignments a USING (session_id)
GROUP BY c.row_index, c.recorded_at
HAVING c.recorded_at < min(a.assigned_at)
