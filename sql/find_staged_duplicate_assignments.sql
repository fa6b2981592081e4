SELECT session_id, experiment_id, count(*) AS copies
FROM staged_assignments GROUP BY ALL HAVING count(*) > 1 LIMIT 20
