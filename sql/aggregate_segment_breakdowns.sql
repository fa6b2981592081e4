-- Exploratory breakdowns of a rate primary metric by the session's model and by its budget:
-- per experiment, arm, dimension and segment, the verified sessions assigned before $end (a UTC
-- midnight) and their successes, summed from the daily counts (internal.segment_days,
-- aggregate_segment_days.sql). Registered frame: breakdown_experiments(experiment_id), the
-- experiments whose primary metric is success.
SELECT experiment_id, arm, is_control, dimension, segment, CAST(sum(sessions) AS BIGINT) AS sessions,
       CAST(sum(successes) AS BIGINT) AS successes
FROM internal.segment_days
SEMI JOIN breakdown_experiments USING (experiment_id)
WHERE day < CAST($end AS DATE)
GROUP BY ALL
ORDER BY ALL
