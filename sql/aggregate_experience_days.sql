-- Experience rows per experiment, arm, UTC day of assignment, UTC day of the verified outcome
-- (each session's latest authoritative outcome, as the experience holds it; NULL: not verified),
-- model, budget, and the evaluator (id, version, kind) of the verified outcome with whether it is
-- the session's only authoritative one: sessions, verified sessions with a success value (rated)
-- and their successes; for the experiments and days of registered frame
-- experience_scope(experiment_id, day), a NULL day being every day of its experiment. $from_at:
-- the earliest day in scope (the experience is read from it on).
SELECT x.experiment_id, x.arm, x.is_control, CAST(x.assigned_at AS DATE) AS day,
       CASE WHEN x.verified THEN CAST(x.recorded_at AS DATE) END AS verified_day, x.model, x.budget,
       x.evaluator_id, x.evaluator_version, x.evaluator_kind, x.authoritative_outcomes = 1 AS single_outcome,
       count(*) AS sessions, count(*) FILTER (WHERE x.verified AND x.success IS NOT NULL) AS rated_sessions,
       CAST(coalesce(sum(x.success) FILTER (WHERE x.verified), 0) AS BIGINT) AS successes
FROM experience x
SEMI JOIN experience_scope s ON s.experiment_id = x.experiment_id AND (s.day IS NULL OR s.day = CAST(x.assigned_at AS DATE))
WHERE x.assigned_at >= $from_at
GROUP BY ALL
