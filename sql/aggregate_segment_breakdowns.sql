-- Exploratory breakdowns of a rate primary metric by the session's model and by its budget:
-- per experiment, arm, dimension and segment, the verified sessions assigned before $end and
-- their successes (each session's authoritative outcome as the experience holds it; a session
-- without a model or budget is in segment '(none)'). Registered frame:
-- breakdown_experiments(experiment_id), the experiments whose primary metric is success.
WITH observed AS (
    SELECT x.experiment_id, x.arm, x.is_control, coalesce(s.model, '(none)') AS model,
           coalesce(CAST(s.budget AS VARCHAR), '(none)') AS budget, x.success
    FROM experience x
    SEMI JOIN breakdown_experiments b USING (experiment_id)
    JOIN staged_sessions s USING (session_id)
    WHERE x.verified AND x.success IS NOT NULL AND x.assigned_at < $end
)
SELECT experiment_id, arm, is_control, 'model' AS dimension, model AS segment, count(*) AS sessions,
       CAST(sum(success) AS BIGINT) AS successes
FROM observed GROUP BY ALL
UNION ALL
SELECT experiment_id, arm, is_control, 'budget' AS dimension, budget AS segment, count(*) AS sessions,
       CAST(sum(success) AS BIGINT) AS successes
FROM observed GROUP BY ALL
ORDER BY ALL
