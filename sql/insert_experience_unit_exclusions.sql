-- The whole-unit exclusion rules, over the experiments they apply to only (session-randomized
-- experiments pay nothing for them), on assignments that passed the row rules:
-- unit_multiple_arms and unit_contaminated (user-randomized: a unit assigned to several arms,
-- or with a row that broke a row rule, loses every row), then repeated_unit (sessions_per_unit
-- 'one': every clean row of a unit after its first by assignment time and session id).
INSERT INTO experience_exclusions
WITH units AS (
    SELECT a.partition_day, a.source_file, a.source_row, a.experiment_id, a.session_id, a.unit_id, a.arm, a.assigned_at,
           s.delivered_arm, s.experiment_id AS session_experiment_id, x.exclusion AS row_rule,
           e.randomization_unit, e.sessions_per_unit
    FROM scope_assignments a
    JOIN staged_experiments e USING (experiment_id)
    LEFT JOIN staged_sessions s USING (session_id)
    LEFT JOIN experience_exclusions x ON x.partition_day = a.partition_day AND x.source_file = a.source_file AND x.source_row = a.source_row
    WHERE e.randomization_unit = 'user' OR e.sessions_per_unit = 'one'
), unit_problems AS (
    SELECT experiment_id, unit_id, count(DISTINCT arm) > 1 AS multiple_arms, count(row_rule) > 0 AS contaminated
    FROM units WHERE randomization_unit = 'user' GROUP BY ALL
    HAVING count(DISTINCT arm) > 1 OR count(row_rule) > 0
), first_clean AS (
    SELECT experiment_id, unit_id, arg_min(session_id, (assigned_at, session_id)) AS first_session
    FROM units WHERE sessions_per_unit = 'one' AND row_rule IS NULL GROUP BY ALL
)
SELECT * FROM (
    SELECT u.partition_day, u.source_file, u.source_row, u.experiment_id, u.session_id, u.unit_id, u.arm, u.delivered_arm, u.session_experiment_id,
        CASE WHEN p.multiple_arms THEN 'unit_multiple_arms'
             WHEN p.contaminated THEN 'unit_contaminated'
             WHEN u.sessions_per_unit = 'one' AND u.session_id <> f.first_session THEN 'repeated_unit' END AS exclusion
    FROM units u
    LEFT JOIN unit_problems p USING (experiment_id, unit_id)
    LEFT JOIN first_clean f USING (experiment_id, unit_id)
    WHERE u.row_rule IS NULL
) WHERE exclusion IS NOT NULL
