-- Loop health per organization and UTC week (Monday) of the session start (seed note 002,
-- section 15): valid verification rate = sessions with an authoritative outcome / sessions;
-- repeated-failure rate = verified failures whose previous verified session of the same user
-- and task type also failed / verified failures (NULL without verified failures).
CREATE OR REPLACE TABLE loop_health AS
WITH counted AS (
    SELECT session_id, count(*) FILTER (WHERE authoritative) AS authoritative_outcomes FROM verification_records GROUP BY ALL
), latest AS (
    -- every session with an outcome, with its latest authoritative outcome (verified) or none;
    -- only sessions with several authoritative outcomes need the ordering
    SELECT v.session_id, true AS verified, v.success FROM verification_records v
    JOIN counted c USING (session_id)
    WHERE c.authoritative_outcomes = 1 AND v.authoritative
    UNION ALL
    SELECT session_id, true, success FROM (
        SELECT v.session_id, v.success,
               row_number() OVER (PARTITION BY v.session_id ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
        FROM verification_records v JOIN counted c USING (session_id)
        WHERE c.authoritative_outcomes > 1 AND v.authoritative
    ) WHERE k = 1
    UNION ALL
    SELECT session_id, false, NULL FROM counted WHERE authoritative_outcomes = 0
), sessions AS (
    SELECT s.session_id, s.org_id, s.user_id, s.task_type, s.started_at,
           CAST(date_trunc('week', s.started_at) AS DATE) AS week,
           l.session_id IS NOT NULL AS has_outcome, coalesce(l.verified, false) AS verified, l.success
    FROM staged_sessions s
    LEFT JOIN latest l USING (session_id)
), sequenced AS (
    -- the success of the previous verified session (with a success value) of the same user and
    -- task type, in one window over every session (no second pass over the sessions)
    SELECT *,
           last_value(CASE WHEN verified THEN success END IGNORE NULLS) OVER (
               PARTITION BY org_id, user_id, task_type ORDER BY started_at, session_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS previous_success
    FROM sessions
)
SELECT org_id, week,
       count(*) AS sessions,
       count(*) FILTER (WHERE has_outcome) AS sessions_with_outcome,
       count(*) FILTER (WHERE verified) AS verified_sessions,
       count(*) FILTER (WHERE verified) / count(*) AS valid_verification_rate,
       count(*) FILTER (WHERE verified AND NOT success) AS verified_failures,
       count(*) FILTER (WHERE verified AND NOT success AND NOT previous_success) AS repeated_failures,
       count(*) FILTER (WHERE verified AND NOT success AND NOT previous_success)
           / nullif(count(*) FILTER (WHERE verified AND NOT success), 0) AS repeated_failure_rate
FROM sequenced
GROUP BY ALL
ORDER BY ALL
