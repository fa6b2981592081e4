-- Exploratory breakdowns of the primary metric by the session's model and by its budget: per
-- experiment, arm, dimension and segment, the verified sessions assigned before $end with a value
-- of the metric (each session's authoritative outcome as the experience holds it, capped as the
-- look caps it: sql/fragments/value_of_metric.sql), their successes (a rate only), the mean of
-- the value and its sample variance; a session without a model or budget is in segment '(none)'.
-- Registered frame: breakdown_experiments(experiment_id, metric), the experiments and their
-- primary metric.
WITH observed AS (
    SELECT x.experiment_id, x.arm, x.is_control, coalesce(s.model, '(none)') AS model,
           coalesce(CAST(s.budget AS VARCHAR), '(none)') AS budget, b.metric,
           x.success, x.time_minutes, x.tokens, x.score,
           TRY_CAST(json_extract_string(e.metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(e.metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM experience x
    JOIN breakdown_experiments b USING (experiment_id)
    JOIN staged_experiments e USING (experiment_id)
    JOIN staged_sessions s USING (session_id)
    WHERE x.verified AND x.assigned_at < $end
), valued AS (
    SELECT experiment_id, arm, is_control, model, budget, metric, {{value_of_metric}} AS value
    FROM observed
), segments AS (
    SELECT experiment_id, arm, is_control, 'model' AS dimension, model AS segment, metric, value
    FROM valued WHERE value IS NOT NULL
    UNION ALL
    SELECT experiment_id, arm, is_control, 'budget' AS dimension, budget AS segment, metric, value
    FROM valued WHERE value IS NOT NULL
)
SELECT experiment_id, arm, is_control, dimension, segment, any_value(metric) AS metric, count(*) AS sessions,
       CASE WHEN any_value(metric) = 'success' THEN CAST(sum(value) AS BIGINT) END AS successes,
       avg(value) AS mean, var_samp(value) AS variance
FROM segments
GROUP BY experiment_id, arm, is_control, dimension, segment
ORDER BY ALL
