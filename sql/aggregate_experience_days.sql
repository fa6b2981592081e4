-- Experience rows per experiment, arm, UTC day of assignment, UTC day of the verified outcome
-- (each session's latest authoritative outcome, as the experience holds it; NULL: not verified),
-- model and budget: sessions, verified sessions with a success value (rated) and their successes;
-- for the experiments and days of registered frame experience_scope(experiment_id, day), a NULL
-- day being every day of its experiment. $from_at: the earliest day in scope (the experience is
-- read from it on).
SELECT x.experiment_id, x.arm, x.is_control, CAST(x.assigned_at AS DATE) AS day,
       CASE WHEN x.verified THEN CAST(x.recorded_at AS DATE) END AS verified_day, x.model, x.budget,
       count(*) AS sessions, count(*) FILTER (WHERE x.verified AND x.success IS NOT NULL) AS rated_sessions,
       CAST(coalesce(sum(x.success) FILTER (WHERE x.verified), 0) AS BIGINT) AS successes
FROM experience x
SEMI JOIN experience_scope s ON s.experiment_id = x.experiment_id AND (s.day IS NULL OR s.day = CAST(x.assigned_at AS DATE))
WHERE x.assigned_at >= $from_at
GROUP BY ALL
