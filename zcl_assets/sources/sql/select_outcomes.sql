-- Outcomes as they land (docs/landing.md, outcomes) with their session's task type, which
-- names the evaluator of the registration file.
SELECT (o.recorded_at AT TIME ZONE 'UTC')::date AS day, o.id::text AS source_id,
       o.session_id::text AS session_id, o.success, o.time_minutes::float8 AS time_minutes, o.recorded_at,
       s.task_type::text AS task_type
FROM {outcomes} o
LEFT JOIN {sessions} s ON s.id = o.session_id
