-- Sufficient statistics of the primary metric per memory_mode experiment (one task) and
-- recall arm: recall off = the control arm, recall on = the other arm. Only verified runs
-- whose (model, budget) cell occurs in both arms count (same task, model and budget); the
-- others are counted as incomparable_runs. Each analysis unit (the randomization unit) is
-- averaged first, so a user-randomized experiment counts users. Time and tokens are capped
-- at the registered metric_caps. Experiments without runs keep a row with null statistics.
-- Only the experiments of the registered frame gain_scope(experiment_id) are read (a night:
-- those whose experience rows or registration changed; a first build: all).
--
-- Exactness (reruns and fresh loads give the same bits): a floating-point sum depends on the
-- order of its terms, which a parallel aggregate changes from run to run. Values are scaled
-- by a power of two per experiment (every |value| below 2^45) and rounded to integers, a step
-- of 2^-45 of the largest value; unit means are rounded to the same step; every sum is then
-- a HUGEINT, and the means and variances are computed once from those exact sums.
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
), scale AS (
    SELECT experiment_id,
           CASE WHEN max(abs(value)) > 0 THEN pow(2.0, 45 - greatest(ceil(log2(max(abs(value)))), -900)) ELSE 1.0 END AS s
    FROM valued GROUP BY experiment_id
), cells AS (
    SELECT experiment_id, model, budget FROM valued GROUP BY ALL HAVING count(DISTINCT is_control) = 2
), marked AS (
    SELECT v.*, c.experiment_id IS NOT NULL AS comparable
    FROM valued v LEFT JOIN cells c USING (experiment_id, model, budget)
), units AS (
    SELECT m.experiment_id, m.is_control, m.unit_id, c.s,
           CAST(round(CAST(sum(CAST(round(m.value * c.s) AS HUGEINT)) AS DOUBLE) / count(*)) AS HUGEINT) AS y, count(*) AS runs
    FROM marked m JOIN scale c USING (experiment_id) WHERE m.comparable GROUP BY m.experiment_id, m.is_control, m.unit_id, c.s
), sums AS (
    SELECT experiment_id, is_control, s, count(*) AS n, sum(runs)::BIGINT AS n_runs, sum(y) AS s1, sum(y * y) AS s2
    FROM units GROUP BY experiment_id, is_control, s
), arms AS (
    SELECT experiment_id, is_control, n AS n_units, n_runs, CAST(s1 AS DOUBLE) / n / s AS mean,
           CASE WHEN n > 1 THEN (CAST(s2 AS DOUBLE) - CAST(s1 AS DOUBLE) * CAST(s1 AS DOUBLE) / n) / (n - 1) / (s * s) END AS variance
    FROM sums
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
