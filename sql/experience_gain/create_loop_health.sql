-- Loop health per organization and UTC week (Monday) of the session start (seed note 002,
-- section 15): valid verification rate = sessions with an authoritative outcome / sessions;
-- repeated-failure rate = verified failures whose previous verified session of the same user
-- and task type also failed / verified failures (NULL without verified failures).
CREATE OR REPLACE TABLE loop_health AS
WITH counted AS (
    SELECT session_id, count(*) FILTER (WHERE authoritative) AS authoritative_outcomes FROM verification_records GROUP BY ALL
), latest AS (
    -- the latest authoritative outcome of each session; only sessions with several need the ordering
    SELECT v.session_id, v.success FROM verification_records v
    SEMI JOIN (SELECT session_id FROM counted WHERE authoritative_outcomes = 1) USING (session_id)
    WHERE v.authoritative
    UNION ALL
    SELECT session_id, success FROM (
        SELECT v.session_id, v.success,
               row_number() OVER (PARTITION BY v.session_id ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
        FROM verification_records v SEMI JOIN (SELECT session_id FROM counted WHERE authoritative_outcomes > 1) USING (session_id)
        WHERE v.authoritative
    ) WHERE k = 1
), sessions AS (
    SELECT s.session_id, s.org_id, s.user_id, s.task_type, s.started_at,
           CAST(date_trunc('week', s.started_at) AS DATE) AS week,
           j.session_id IS NOT NULL AS has_outcome, l.session_id IS NOT NULL AS verified, l.success
    FROM staged_sessions s
    LEFT JOIN counted j USING (session_id)
    LEFT JOIN latest l USING (session_id)
), sequenced AS (
    SELECT session_id,
           lag(success) OVER (PARTITION BY org_id, user_id, task_type ORDER BY started_at, session_id) AS previous_success
    FROM sessions WHERE verified AND success IS NOT NULL
)
SELECT org_id, week,
       count(*) AS sessions,
       count(*) FILTER (WHERE has_outcome) AS sessions_with_outcome,
       count(*) FILTER (WHERE verified) AS verified_sessions,
       count(*) FILTER (WHERE verified) / count(*) AS valid_verification_rate,
       count(*) FILTER (WHERE verified AND NOT success) AS verified_failures,
       count(*) FILTER (WHERE verified AND NOT success AND NOT q.previous_success) AS repeated_failures,
       count(*) FILTER (WHERE verified AND NOT success AND NOT q.previous_success)
           / nullif(count(*) FILTER (WHERE verified AND NOT success), 0) AS repeated_failure_rate
FROM sessions LEFT JOIN sequenced q USING (session_id)
GROUP BY ALL
ORDER BY ALL
