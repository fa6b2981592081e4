-- The analysis fact table: one row per (experiment, session) of a staged assignment in scope
-- (temp view scope_assignments: every staged assignment, or those a night's changes touch)
-- that broke no exclusion rule (experience_exclusions), with its registration's organization,
-- task type and unit, its session, and its verified outcome (NULL metrics when no
-- authoritative outcome exists yet), in one pass over the assignments. Temp view
-- scope_verification holds the verification records of the sessions in scope.
WITH outcome_counts AS (
    SELECT session_id, count(*) AS outcomes, count(*) FILTER (WHERE authoritative) AS authoritative_outcomes
    FROM scope_verification GROUP BY ALL
), verified AS (
    -- every session with an outcome: its counts and its latest authoritative outcome (ties:
    -- evaluator id, then version; NULL fields when none is authoritative). Only sessions with
    -- several authoritative outcomes need the ordering.
    SELECT v.session_id, v.evaluator_kind, v.evaluator_id, v.evaluator_version, v.recorded_at, v.success,
           v.time_minutes, v.tokens, v.score, c.outcomes, c.authoritative_outcomes
    FROM scope_verification v JOIN outcome_counts c USING (session_id)
    WHERE c.authoritative_outcomes = 1 AND v.authoritative
    UNION ALL
    SELECT session_id, evaluator_kind, evaluator_id, evaluator_version, recorded_at, success, time_minutes, tokens,
           score, outcomes, authoritative_outcomes FROM (
        SELECT v.session_id, v.evaluator_kind, v.evaluator_id, v.evaluator_version, v.recorded_at, v.success,
               v.time_minutes, v.tokens, v.score, c.outcomes, c.authoritative_outcomes,
               row_number() OVER (PARTITION BY v.session_id ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
        FROM scope_verification v JOIN outcome_counts c USING (session_id)
        WHERE c.authoritative_outcomes > 1 AND v.authoritative
    ) WHERE k = 1
    UNION ALL
    SELECT session_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, outcomes, authoritative_outcomes
    FROM outcome_counts WHERE authoritative_outcomes = 0
)
SELECT a.experiment_id, e.org_id, e.task_type, e.randomization_unit, a.session_id, a.unit_id, s.user_id, a.arm,
       a.arm = e.control_arm AS is_control, a.assigned_at, s.context_digest,
       coalesce(v.authoritative_outcomes, 0) > 0 AS verified, v.evaluator_kind, v.evaluator_id, v.evaluator_version,
       v.recorded_at, CAST(v.success AS DOUBLE) AS success, v.time_minutes, v.tokens, v.score,
       coalesce(v.outcomes, 0) AS outcomes, coalesce(v.authoritative_outcomes, 0) AS authoritative_outcomes,
       s.model, s.budget
FROM scope_assignments a
JOIN staged_experiments e USING (experiment_id)
JOIN staged_sessions s USING (session_id)
LEFT JOIN verified v USING (session_id)
ANTI JOIN experience_exclusions x ON x.partition_day = a.partition_day AND x.source_file = a.source_file AND x.source_row = a.source_row
