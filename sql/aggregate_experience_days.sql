-- Experience rows per experiment, arm, UTC day of assignment, UTC day of the verified outcome
-- (each session's latest authoritative outcome, as the experience holds it; NULL: not verified),
-- model, budget, and the evaluator (id, version, kind) of the verified outcome with whether it is
-- the session's only authoritative one: sessions, and of the verified sessions with a value of the
-- experiment's primary metric (capped as the look caps it: sql/fragments/value_of_metric.sql) their
-- count and the sums of the value and its square, each value rounded once to the metric's
-- resolution and summed as a HUGEINT, so sums over any split of the days are exact. For the
-- experiments and days of registered frame experience_scope(experiment_id, day), a NULL day being
-- every day of its experiment. Registered frame metric_resolutions(metric, resolution). $from_at:
-- the earliest day in scope (the experience is read from it on).
WITH observed AS (
    SELECT x.experiment_id, x.arm, x.is_control, CAST(x.assigned_at AS DATE) AS day,
           CASE WHEN x.verified THEN CAST(x.recorded_at AS DATE) END AS verified_day, x.model, x.budget,
           x.evaluator_id, x.evaluator_version, x.evaluator_kind, x.authoritative_outcomes = 1 AS single_outcome,
           x.verified, x.success, x.time_minutes, x.tokens, x.score, e.primary_metric AS metric, r.resolution,
           TRY_CAST(json_extract_string(e.metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(e.metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM experience x
    SEMI JOIN experience_scope s ON s.experiment_id = x.experiment_id AND (s.day IS NULL OR s.day = CAST(x.assigned_at AS DATE))
    JOIN staged_experiments e USING (experiment_id)
    LEFT JOIN metric_resolutions r ON r.metric = e.primary_metric
    WHERE x.assigned_at >= $from_at
), valued AS (
    SELECT *, CASE WHEN verified THEN CAST(round({{value_of_metric}} / resolution) AS HUGEINT) END AS y FROM observed
)
SELECT experiment_id, arm, is_control, day, verified_day, model, budget, evaluator_id, evaluator_version, evaluator_kind,
       single_outcome, count(*) AS sessions, count(y) AS valued, coalesce(sum(y), 0) AS value_sum,
       coalesce(sum(y * y), 0) AS value_squares
FROM valued
GROUP BY experiment_id, arm, is_control, day, verified_day, model, budget, evaluator_id, evaluator_version, evaluator_kind,
         single_outcome
