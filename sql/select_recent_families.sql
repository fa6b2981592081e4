-- The families (organization and task type) with sessions in the 28 days before $end.
SELECT DISTINCT org_id, task_type FROM staged_sessions
WHERE started_at >= $end - INTERVAL 28 DAY AND started_at < $end
ORDER BY ALL
