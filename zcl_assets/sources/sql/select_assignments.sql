-- Assignments as they land (docs/landing.md, assignments) with their session's user, the
-- randomization unit of a user-randomized experiment.
SELECT (a.assigned_at AT TIME ZONE 'UTC')::date AS day, a.id::text AS source_id,
       a.session_id::text AS session_id, a.experiment_id::text AS experiment_id, a.group_name::text AS arm,
       s.user_id::text AS user_id, a.assigned_at
FROM {assignments} a
LEFT JOIN {sessions} s ON s.id = a.session_id
