-- Sessions as they land (docs/landing.md, sessions), with their UTC day and source row id;
-- experiment_group is what the context bundle carried (the delivered arm).
SELECT (s.started_at AT TIME ZONE 'UTC')::date AS day, s.id::text AS source_id,
       s.id::text AS session_id, s.organization_id::text AS org_id, s.user_id::text AS user_id,
       s.task_type::text AS task_type, s.model::text AS model, s.started_at, s.ended_at,
       s.experiment_id::text AS experiment_id, s.experiment_group::text AS delivered_arm
FROM {sessions} s
