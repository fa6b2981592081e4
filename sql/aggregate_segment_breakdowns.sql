-- Exploratory breakdowns of the primary metric by the session's model and by its budget: per
-- experiment, arm, dimension and segment, the verified sessions assigned before $end (a UTC
-- midnight) with a value of the metric (each session's authoritative outcome as the experience
-- holds it, capped as the look caps it), their successes (a rate only), the mean of the value and
-- its sample variance; a session without a model or budget is in segment '(none)'. Summed from the
-- experience's daily counts (internal.experience_days), whose sums are exact HUGEINTs at the
-- metric's resolution: the centered sum n Q - S^2 is exact, and only the two quotients are
-- doubles, so a rerun and any split of the nights give the same bits. Registered frame:
-- breakdown_experiments(experiment_id, metric, resolution), the experiments, their primary metric
-- and its resolution.
WITH days AS (
    SELECT d.experiment_id, d.arm, d.is_control, coalesce(d.model, '(none)') AS model,
           coalesce(CAST(d.budget AS VARCHAR), '(none)') AS budget, b.metric, b.resolution, d.valued, d.value_sum,
           d.value_squares
    FROM internal.experience_days d
    JOIN breakdown_experiments b USING (experiment_id)
    WHERE d.day < CAST($end AS DATE) AND d.valued > 0
), segments AS (
    SELECT experiment_id, arm, is_control, 'model' AS dimension, model AS segment, metric, resolution, valued, value_sum,
           value_squares
    FROM days
    UNION ALL
    SELECT experiment_id, arm, is_control, 'budget' AS dimension, budget AS segment, metric, resolution, valued, value_sum,
           value_squares
    FROM days
), sums AS (
    SELECT experiment_id, arm, is_control, dimension, segment, any_value(metric) AS metric,
           any_value(resolution) AS resolution, CAST(sum(valued) AS HUGEINT) AS n, sum(value_sum) AS sy,
           sum(value_squares) AS syy
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
