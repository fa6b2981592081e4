-- (session, experiment) keys of the staged assignments of a run's days ($days) that occur more
-- than once in the whole table.
WITH keys AS (
    SELECT DISTINCT session_id, experiment_id FROM staged_assignments
    WHERE partition_day IN (SELECT CAST(unnest($days::VARCHAR[]) AS DATE))
)
SELECT session_id, experiment_id, count(*) AS copies
FROM staged_assignments SEMI JOIN keys USING (session_id, experiment_id)
GROUP BY ALL HAVING count(*) > 1 LIMIT 20
