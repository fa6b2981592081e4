-- Each family (organization and task type) with sessions in the 28 days before $end (a UTC
-- midnight), with what those days showed, from the daily counts of loop health
-- (internal.loop_health_days): sessions a day, the share of them with an authoritative outcome,
-- and the success rate of the verified ones (each session's latest authoritative outcome). These
-- are the figures sql/measure_family_traffic.sql gives a session-randomized registration at
-- $end, summed from days instead of read from every session, so a night's outlook costs 28 rows
-- a family whatever the traffic.
SELECT org_id, task_type,
       sum(sessions) / 28.0 AS traffic_per_day,
       sum(verified_sessions) / sum(sessions) AS verified_share,
       sum(verified_successes) / nullif(sum(verified_successes) + sum(verified_failures), 0) AS success_rate
FROM internal.loop_health_days
WHERE day >= CAST($end AS DATE) - INTERVAL 28 DAY AND day < CAST($end AS DATE)
GROUP BY org_id, task_type
HAVING sum(sessions) > 0
ORDER BY org_id, task_type
