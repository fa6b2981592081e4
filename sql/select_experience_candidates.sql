-- Every staged assignment with its registration, session and verified outcome, and the
-- first exclusion rule it breaks (NULL when it belongs in the experience table).
-- Rules, in order: no_session, delivered_arm_mismatch (row level); unit_multiple_arms,
-- unit_contaminated (user-randomized: the whole unit); repeated_unit (sessions_per_unit
-- 'one': every row of a unit after its first).
CREATE OR REPLACE TEMP TABLE experience_candidates AS
WITH verified AS (
    SELECT * EXCLUDE (k) FROM (
        SELECT v.*, row_number() OVER (PARTITION BY session_id ORDER BY recorded_at DESC, evaluator_id, evaluator_version) AS k
        FROM verification_records v WHERE authoritative
    ) WHERE k = 1
), outcome_counts AS (
    SELECT session_id, count(*) AS outcomes, count(*) FILTER (WHERE authoritative) AS authoritative_outcomes
    FROM verification_records GROUP BY ALL
), joined AS (
    SELECT a.experiment_id, e.org_id, e.task_type, e.randomization_unit, e.sessions_per_unit,
           e.control_arm, a.session_id, a.unit_id, a.arm, a.assigned_at,
           s.session_id IS NOT NULL AS has_session, s.delivered_arm, s.experiment_id AS session_experiment_id,
           s.context_digest, s.user_id,
           v.session_id IS NOT NULL AS verified, v.evaluator_kind, v.evaluator_id, v.evaluator_version, v.recorded_at,
           CAST(v.success AS DOUBLE) AS success, v.time_minutes, v.tokens, v.score,
           coalesce(c.outcomes, 0) AS outcomes, coalesce(c.authoritative_outcomes, 0) AS authoritative_outcomes,
           a.partition_day, a.source_file, a.source_row
    FROM staged_assignments a
    JOIN staged_experiments e USING (experiment_id)
    LEFT JOIN staged_sessions s USING (session_id)
    LEFT JOIN verified v USING (session_id)
    LEFT JOIN outcome_counts c USING (session_id)
), row_rules AS (
    SELECT *,
        CASE WHEN NOT has_session THEN 'no_session'
             WHEN session_experiment_id IS DISTINCT FROM experiment_id OR delivered_arm IS DISTINCT FROM arm
                 THEN 'delivered_arm_mismatch' END AS row_rule
    FROM joined
), unit_rules AS (
    SELECT *,
        count(DISTINCT arm) OVER unit AS unit_arms,
        count(row_rule) OVER unit AS unit_bad_rows,
        row_number() OVER (PARTITION BY experiment_id, unit_id, (row_rule IS NULL) ORDER BY assigned_at, session_id) AS unit_order
    FROM row_rules
    WINDOW unit AS (PARTITION BY experiment_id, unit_id)
)
SELECT * EXCLUDE (row_rule, unit_arms, unit_bad_rows, unit_order),
    coalesce(row_rule,
        CASE WHEN randomization_unit = 'user' AND unit_arms > 1 THEN 'unit_multiple_arms'
             WHEN randomization_unit = 'user' AND unit_bad_rows > 0 THEN 'unit_contaminated'
             WHEN sessions_per_unit = 'one' AND unit_order > 1 THEN 'repeated_unit' END) AS exclusion
FROM unit_rules
