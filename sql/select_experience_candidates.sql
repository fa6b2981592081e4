-- Every staged assignment with its registration, session and verified outcome, and the
-- first exclusion rule it breaks (NULL when it belongs in the experience table).
-- Rules, in order: no_session, delivered_arm_mismatch (row level); unit_multiple_arms,
-- unit_contaminated (user-randomized: the whole unit); repeated_unit (sessions_per_unit
-- 'one': every clean row of a unit after its first by assignment time and session id).
-- Unit rules are aggregated only over the experiments they apply to, by GROUP BY (not by
-- windows over every row), so session-randomized experiments pay nothing for them.
CREATE OR REPLACE TEMP TABLE experience_candidates AS
WITH outcome_counts AS (
    SELECT session_id, count(*) AS outcomes, count(*) FILTER (WHERE authoritative) AS authoritative_outcomes
    FROM verification_records GROUP BY ALL
), verified AS (
    -- the latest authoritative outcome of each session (ties: evaluator id, then version);
    -- only sessions with several authoritative outcomes need the ordering
    SELECT v.session_id, v.evaluator_kind, v.evaluator_id, v.evaluator_version, v.recorded_at, v.success,
           v.time_minutes, v.tokens, v.score
    FROM verification_records v SEMI JOIN (SELECT session_id FROM outcome_counts WHERE authoritative_outcomes = 1) USING (session_id)
    WHERE v.authoritative
    UNION ALL
    SELECT * EXCLUDE (k) FROM (
        SELECT v.session_id, v.evaluator_kind, v.evaluator_id, v.evaluator_version, v.recorded_at, v.success,
               v.time_minutes, v.tokens, v.score,
               row_number() OVER (PARTITION BY v.session_id ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
        FROM verification_records v SEMI JOIN (SELECT session_id FROM outcome_counts WHERE authoritative_outcomes > 1) USING (session_id)
        WHERE v.authoritative
    ) WHERE k = 1
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
), unit_problems AS (
    -- user-randomized units assigned to several arms, or with a row that broke a row rule
    SELECT experiment_id, unit_id, count(DISTINCT arm) > 1 AS multiple_arms, count(row_rule) > 0 AS contaminated
    FROM row_rules WHERE randomization_unit = 'user' GROUP BY ALL
    HAVING count(DISTINCT arm) > 1 OR count(row_rule) > 0
), first_clean AS (
    -- unit-level exports: the first clean row of each unit
    SELECT experiment_id, unit_id, arg_min(session_id, (assigned_at, session_id)) AS first_session
    FROM row_rules WHERE sessions_per_unit = 'one' AND row_rule IS NULL GROUP BY ALL
)
SELECT r.* EXCLUDE (row_rule),
    coalesce(r.row_rule,
        CASE WHEN u.multiple_arms THEN 'unit_multiple_arms'
             WHEN u.contaminated THEN 'unit_contaminated'
             WHEN r.sessions_per_unit = 'one' AND r.session_id <> f.first_session THEN 'repeated_unit' END) AS exclusion
FROM row_rules r
LEFT JOIN unit_problems u USING (experiment_id, unit_id)
LEFT JOIN first_clean f USING (experiment_id, unit_id)
