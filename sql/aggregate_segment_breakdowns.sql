-- Exploratory breakdowns of the primary metric by the session's model and by its budget: per
-- experiment, arm, dimension and segment, the verified sessions assigned before $end with a value
-- of the metric (each session's authoritative outcome as the experience holds it, capped as the
-- look caps it: sql/fragments/value_of_metric.sql), their successes (a rate only), the mean of
-- the value and its sample variance; a session without a model or budget is in segment '(none)'.
-- Exactness (a rerun is bit-identical): each value is rounded once to the metric's resolution and
-- summed as a HUGEINT, the centered sum n Q - S^2 is exact, and only the two quotients are doubles.
-- Registered frame: breakdown_experiments(experiment_id, metric, resolution), the experiments, their
-- primary metric and its resolution.
WITH observed AS (
    SELECT x.experiment_id, x.arm, x.is_control, coalesce(s.model, '(none)') AS model,
           coalesce(CAST(s.budget AS VARCHAR), '(none)') AS budget, b.metric, b.resolution,
           x.success, x.time_minutes, x.tokens, x.score,
           TRY_CAST(json_extract_string(e.metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(e.metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM experience x
    JOIN breakdown_experiments b USING (experiment_id)
    JOIN staged_experiments e USING (experiment_id)
    JOIN staged_sessions s USING (session_id)
    WHERE x.verified AND x.assigned_at < $end
), valued AS (
    SELECT experiment_id, arm, is_control, model, budget, metric, resolution,
           CAST(round({{value_of_metric}} / resolution) AS HUGEINT) AS y
    FROM observed
), segments AS (
    SELECT experiment_id, arm, is_control, 'model' AS dimension, model AS segment, metric, resolution, y
    FROM valued WHERE y IS NOT NULL
    UNION ALL
    SELECT experiment_id, arm, is_control, 'budget' AS dimension, budget AS segment, metric, resolution, y
    FROM valued WHERE y IS NOT NULL
), sums AS (
    SELECT experiment_id, arm, is_control, dimension, segment, any_value(metric) AS metric,
           any_value(resolution) AS resolution, CAST(count(*) AS HUGEINT) AS n, sum(y) AS sy, sum(y * y) AS syy
    FROM segments
    GROUP BY experiment_id, arm, is_control, dimension, segment
)
SELECT experiment_id, arm, is_control, dimension, segment, metric, CAST(n AS BIGINT) AS sessions,
       CASE WHEN metric = 'success' THEN CAST(sy AS BIGINT) END AS successes,
       CAST(sy AS DOUBLE) / CAST(n AS DOUBLE) * resolution AS mean,
       CASE WHEN n > 1 THEN CAST(n * syy - sy * sy AS DOUBLE) / CAST(n * (n - 1) AS DOUBLE) * resolution * resolution
       END AS variance
FROM sums
ORDER BY ALL
