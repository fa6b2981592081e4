-- Loop health per organization and UTC week (Monday) of the session start (seed note 002,
-- section 15), from the stored daily counts (internal.loop_health_days,
-- aggregate_loop_health_days.sql): valid verification rate = sessions with an authoritative
-- outcome / sessions; repeated-failure rate = verified failures whose previous verified
-- session of the same user and task type also failed / verified failures (NULL without
-- verified failures).
CREATE OR REPLACE TABLE loop_health AS
WITH weekly AS (
    SELECT org_id, CAST(date_trunc('week', day) AS DATE) AS week,
           sum(sessions) AS sessions, sum(sessions_with_outcome) AS sessions_with_outcome,
           sum(verified_sessions) AS verified_sessions, sum(verified_failures) AS verified_failures,
           sum(repeated_failures) AS repeated_failures
    FROM internal.loop_health_days GROUP BY ALL
)
SELECT org_id, week,
       CAST(sessions AS BIGINT) AS sessions,
       CAST(sessions_with_outcome AS BIGINT) AS sessions_with_outcome,
       CAST(verified_sessions AS BIGINT) AS verified_sessions,
       verified_sessions / sessions AS valid_verification_rate,
       CAST(verified_failures AS BIGINT) AS verified_failures,
       CAST(repeated_failures AS BIGINT) AS repeated_failures,
       repeated_failures / nullif(verified_failures, 0) AS repeated_failure_rate
FROM weekly
ORDER BY ALL
