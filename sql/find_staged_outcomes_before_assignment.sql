SELECT o.session_id, o.recorded_at, a.assigned_at
FROM staged_outcomes o JOIN staged_assignments a USING (session_id)
WHERE o.recorded_at < a.assigned_at
LIMIT 20
