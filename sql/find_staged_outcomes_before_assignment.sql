-- Staged outcomes recorded before their session's first assignment: the staging rule
-- outcome_before_assignment compares with the first assignment, and so does this check.
SELECT o.session_id, o.recorded_at, a.first_assigned_at AS assigned_at
FROM staged_outcomes o JOIN (
    SELECT session_id, min(assigned_at) AS first_assigned_at FROM staged_assignments GROUP BY ALL
) a USING (session_id)
WHERE o.recorded_at < a.first_assigned_at
LIMIT 20
