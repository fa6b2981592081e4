-- Verified sessions with a success value and their successes, per experiment, arm, dimension
-- (the session's model or budget; a session without one is in segment '(none)'), segment and UTC
-- day of assignment (each session's authoritative outcome as the experience holds it), for the
-- experiments and days of registered frame segment_scope(experiment_id, day): a NULL day is every
-- day of its experiment. $from_at: the earliest day in scope (the experience is read from it on).
WITH observed AS (
    SELECT x.experiment_id, x.arm, x.is_control, coalesce(x.model, '(none)') AS model,
           coalesce(CAST(x.budget AS VARCHAR), '(none)') AS budget, CAST(x.assigned_at AS DATE) AS day, x.success
    FROM experience x
    SEMI JOIN segment_scope s ON s.experiment_id = x.experiment_id AND (s.day IS NULL OR s.day = CAST(x.assigned_at AS DATE))
    WHERE x.verified AND x.success IS NOT NULL AND x.assigned_at >= $from_at
)
SELECT experiment_id, arm, is_control, 'model' AS dimension, model AS segment, day, count(*) AS sessions,
       CAST(sum(success) AS BIGINT) AS successes
FROM observed GROUP BY ALL
UNION ALL
SELECT experiment_id, arm, is_control, 'budget' AS dimension, budget AS segment, day, count(*) AS sessions,
       CAST(sum(success) AS BIGINT) AS successes
FROM observed GROUP BY ALL
