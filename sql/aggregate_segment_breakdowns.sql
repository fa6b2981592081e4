-- Exploratory breakdowns of a rate primary metric by the session's model and by its budget:
-- per experiment, arm, dimension and segment, the verified sessions with a success value assigned
-- before $end (a UTC midnight) and their successes (each session's authoritative outcome as the
-- experience holds it; a session without a model or budget is in segment '(none)'), summed from
-- the experience's daily counts (internal.experience_days). Registered frame:
-- breakdown_experiments(experiment_id), the experiments whose primary metric is success.
WITH observed AS (
    SELECT experiment_id, arm, is_control, coalesce(model, '(none)') AS model,
           coalesce(CAST(budget AS VARCHAR), '(none)') AS budget, rated_sessions, successes
    FROM internal.experience_days
    SEMI JOIN breakdown_experiments USING (experiment_id)
    WHERE day < CAST($end AS DATE) AND rated_sessions > 0
)
SELECT experiment_id, arm, is_control, 'model' AS dimension, model AS segment,
       CAST(sum(rated_sessions) AS BIGINT) AS sessions, CAST(sum(successes) AS BIGINT) AS successes
FROM observed GROUP BY ALL
UNION ALL
SELECT experiment_id, arm, is_control, 'budget' AS dimension, budget AS segment,
       CAST(sum(rated_sessions) AS BIGINT) AS sessions, CAST(sum(successes) AS BIGINT) AS successes
FROM observed GROUP BY ALL
ORDER BY ALL
