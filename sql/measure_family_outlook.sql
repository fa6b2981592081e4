-- Per family (organization and task type) with sessions in the 28 days before $end (the end
-- of the night): sessions and distinct users a day, the share of those sessions with an
-- authoritative outcome, and the success rate among them (the latest authoritative outcome of
-- each session; ties: the first evaluator id, then version, as in the experience), the baseline a new experiment would register.
WITH recent AS (
    SELECT session_id, org_id, task_type, user_id FROM staged_sessions
    WHERE started_at >= $end - INTERVAL 28 DAY AND started_at < $end
), verified AS (
    SELECT v.session_id,
           arg_min(CAST(v.success AS DOUBLE), (-epoch_us(v.recorded_at), v.evaluator_id, v.evaluator_version)) AS success
    FROM verification_records v SEMI JOIN recent r USING (session_id)
    WHERE v.authoritative GROUP BY ALL
)
SELECT r.org_id, r.task_type, count(*) / 28.0 AS sessions_per_day, count(DISTINCT r.user_id) / 28.0 AS users_per_day,
       count(v.session_id) / count(*) AS verified_share, avg(v.success) AS success_rate
FROM recent r LEFT JOIN verified v USING (session_id)
GROUP BY ALL
ORDER BY ALL
