-- Per family (organization and task type) with sessions in the 28 days before $end (the end
-- of the night): the share of those sessions with an authoritative outcome, and the success
-- rate among them (each session's latest authoritative outcome; ties: the first evaluator id,
-- then version, as in the experience), the baseline a new experiment would register. Its
-- traffic is the registration's own (measure_family_traffic.sql).
WITH recent AS (
    SELECT session_id, org_id, task_type FROM staged_sessions
    WHERE started_at >= $end - INTERVAL 28 DAY AND started_at < $end
), verified AS (
    SELECT session_id, success FROM (
        SELECT v.session_id, CAST(v.success AS DOUBLE) AS success,
               row_number() OVER (PARTITION BY v.session_id ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
        FROM verification_records v SEMI JOIN recent r USING (session_id)
        WHERE v.authoritative
    ) WHERE k = 1
)
SELECT r.org_id, r.task_type, count(v.session_id) / count(*) AS verified_share, avg(v.success) AS success_rate
FROM recent r LEFT JOIN verified v USING (session_id)
GROUP BY ALL
ORDER BY ALL
