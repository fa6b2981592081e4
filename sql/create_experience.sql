-- The analysis fact table: one row per (experiment, session) that passed every exclusion
-- rule, with its verified outcome (NULL metrics when no authoritative outcome exists yet).
CREATE OR REPLACE TABLE experience AS
SELECT experiment_id, org_id, task_type, randomization_unit, session_id, unit_id, user_id, arm,
       arm = control_arm AS is_control, assigned_at, context_digest, verified, evaluator_kind,
       evaluator_id, evaluator_version, recorded_at, success, time_minutes, tokens, score, outcomes, authoritative_outcomes
FROM experience_candidates WHERE exclusion IS NULL
