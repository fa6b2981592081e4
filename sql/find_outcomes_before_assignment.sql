-- Outcomes of `subject` recorded before the first assignment of their session (looked up
-- for the subject's sessions only).
SELECT c.partition_day, c.source_file, c.source_row,
       'recorded at ' || CAST(c.recorded_at AS VARCHAR) || ', before its assignment at '
       || CAST(a.first_assigned_at AS VARCHAR) AS reason
FROM subject c JOIN (
    SELECT session_id, min(assigned_at) AS first_assigned_at FROM staged_assignments
    WHERE session_id IN (SELECT session_id FROM subject) GROUP BY ALL
) a USING (session_id)
WHERE c.recorded_at < a.first_assigned_at
