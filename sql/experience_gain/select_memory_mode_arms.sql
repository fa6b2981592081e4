-- Sufficient statistics of the primary metric per memory_mode experiment (one task) and
-- recall arm: recall off = the control arm, recall on = the other arm. Only verified runs
-- whose (model, budget) cell occurs in both arms count (same task, model and budget); the
-- others are counted as incomparable_runs. Each analysis unit (the randomization unit) is
-- averaged first, so a user-randomized experiment counts users. Time and tokens are capped
-- at the registered metric_caps. Experiments without runs keep a row with null statistics.
-- Only the experiments of the registered frame gain_scope(experiment_id) are read (a night:
-- those whose experience rows or registration changed; a first build: all).
WITH memory AS (
    SELECT experiment_id, org_id, task_type, primary_metric, direction, control_arm, min_samples_per_arm,
           array_length(CAST(json_extract_string(arms, '$[*].name') AS VARCHAR[])) AS arm_count,
           TRY_CAST(json_extract_string(metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM staged_experiments WHERE kind = 'memory_mode' AND experiment_id IN (SELECT experiment_id FROM gain_scope)
), runs AS (
    SELECT x.experiment_id, x.is_control, x.unit_id,
           coalesce(s.model, '') AS model, coalesce(CAST(s.budget AS VARCHAR), '') AS budget,
           CASE m.primary_metric
               WHEN 'score' THEN x.score
               WHEN 'success' THEN x.success
               WHEN 'time_minutes' THEN CASE WHEN x.time_minutes > m.cap_time THEN m.cap_time ELSE x.time_minutes END
               WHEN 'tokens' THEN CASE WHEN x.tokens > m.cap_tokens THEN m.cap_tokens ELSE x.tokens END
           END AS value
    FROM experience x
    JOIN memory m USING (experiment_id)
    JOIN staged_sessions s USING (session_id)
    WHERE x.verified
), valued AS (
    SELECT * FROM runs WHERE value IS NOT NULL
), cells AS (
    SELECT experiment_id, model, budget FROM valued GROUP BY ALL HAVING count(DISTINCT is_control) = 2
), marked AS (
    SELECT v.*, c.experiment_id IS NOT NULL AS comparable
    FROM valued v LEFT JOIN cells c USING (experiment_id, model, budget)
), units AS (
    SELECT experiment_id, is_control, unit_id, avg(value) AS y, count(*) AS runs
    FROM marked WHERE comparable GROUP BY ALL
), arms AS (
    SELECT experiment_id, is_control, count(*) AS n_units, sum(runs)::BIGINT AS n_runs, avg(y) AS mean, var_samp(y) AS variance
    FROM units GROUP BY ALL
), incomparable AS (
    SELECT experiment_id, count(*) FILTER (WHERE NOT comparable) AS incomparable_runs FROM marked GROUP BY ALL
)
SELECT m.experiment_id, m.org_id, m.task_type, m.primary_metric AS metric, m.direction, m.arm_count,
       m.min_samples_per_arm,
       coalesce(r_on.n_units, 0) AS n_on, coalesce(r_on.n_runs, 0) AS runs_on, r_on.mean AS mean_on, r_on.variance AS var_on,
       coalesce(r_off.n_units, 0) AS n_off, coalesce(r_off.n_runs, 0) AS runs_off, r_off.mean AS mean_off, r_off.variance AS var_off,
       coalesce(i.incomparable_runs, 0) AS incomparable_runs
FROM memory m
LEFT JOIN arms r_on ON r_on.experiment_id = m.experiment_id AND NOT r_on.is_control
LEFT JOIN arms r_off ON r_off.experiment_id = m.experiment_id AND r_off.is_control
LEFT JOIN incomparable i ON i.experiment_id = m.experiment_id
ORDER BY m.org_id, m.task_type, m.experiment_id
