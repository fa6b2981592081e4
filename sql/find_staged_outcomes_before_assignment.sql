-- Staged outcomes recorded before their session's first assignment, among the outcomes of a
-- run's days ($days) and the outcomes of sessions assigned on them: the staging rule
-- outcome_before_assignment compares with the first assignment, and so does this check.
WITH days AS (
    SELECT CAST(unnest($days::VARCHAR[]) AS DATE) AS partition_day
), sessions AS (
    SELECT session_id FROM staged_outcomes WHERE partition_day IN (SELECT partition_day FROM days)
    UNION SELECT session_id FROM staged_assignments WHERE partition_day IN (SELECT partition_day FROM days)
)
SELECT o.session_id, o.recorded_at, a.first_assigned_at AS assigned_at
FROM staged_outcomes o JOIN (
    SELECT session_id, min(assigned_at) AS first_assigned_at FROM staged_assignments
    WHERE session_id IN (SELECT session_id FROM sessions) GROUP BY ALL
) a USING (session_id)
WHERE o.session_id IN (SELECT session_id FROM sessions) AND o.recorded_at < a.first_assigned_at
LIMIT 20
