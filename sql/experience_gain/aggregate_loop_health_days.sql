-- The counts of loop health per organization, task type and UTC day of the session start (seed
-- note 002, section 15), for the days on and after $from_at: sessions, sessions with an outcome,
-- verified sessions (an authoritative outcome), verified successes and failures (the success of
-- each session's latest authoritative outcome), and repeated failures (verified failures whose
-- previous verified session of the same user and task type also failed).
-- create_loop_health.sql sums them per organization and week; select_family_traffic.sql per
-- family over the 28 days before a night. The previous verified session of each
-- user's first session in those days is looked up before them (prior), so a day's counts are
-- those of a build over every day.
WITH scope AS (
    SELECT session_id, org_id, user_id, task_type, started_at
    FROM staged_sessions WHERE started_at >= $from_at
), keys AS (
    SELECT DISTINCT org_id, user_id, task_type FROM scope
), earlier AS (
    SELECT s.session_id, s.org_id, s.user_id, s.task_type, s.started_at
    FROM staged_sessions s SEMI JOIN keys k USING (org_id, user_id, task_type)
    WHERE s.started_at < $from_at
), outcomes AS (
    -- the outcomes of those sessions, read once
    SELECT session_id, authoritative, success, recorded_at, evaluator_id, evaluator_version
    FROM verification_records
    WHERE session_id IN (SELECT session_id FROM scope UNION ALL SELECT session_id FROM earlier)
), counted AS (
    SELECT session_id, count(*) FILTER (WHERE authoritative) AS authoritative_outcomes
    FROM outcomes
    GROUP BY ALL
), latest AS (
    -- every session with an outcome, with its latest authoritative outcome (verified) or none;
    -- only sessions with several authoritative outcomes need the ordering
    SELECT v.session_id, true AS verified, v.success FROM outcomes v
    JOIN counted c USING (session_id)
    WHERE c.authoritative_outcomes = 1 AND v.authoritative
    UNION ALL
    SELECT session_id, true, success FROM (
        SELECT v.session_id, v.success,
               row_number() OVER (PARTITION BY v.session_id ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
        FROM outcomes v JOIN counted c USING (session_id)
        WHERE c.authoritative_outcomes > 1 AND v.authoritative
    ) WHERE k = 1
    UNION ALL
    SELECT session_id, false, NULL FROM counted WHERE authoritative_outcomes = 0
), prior AS (
    -- the success of each key's last verified session (with a success value) before the weeks
    SELECT e.org_id, e.user_id, e.task_type, arg_max(l.success, (e.started_at, e.session_id)) AS previous_success
    FROM earlier e JOIN latest l USING (session_id)
    WHERE l.verified AND l.success IS NOT NULL
    GROUP BY ALL
), sessions AS (
    SELECT s.*, l.session_id IS NOT NULL AS has_outcome, coalesce(l.verified, false) AS verified, l.success
    FROM scope s LEFT JOIN latest l USING (session_id)
), sequenced AS (
    SELECT s.*,
           coalesce(last_value(CASE WHEN s.verified THEN s.success END IGNORE NULLS) OVER (
               PARTITION BY s.org_id, s.user_id, s.task_type ORDER BY s.started_at, s.session_id
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), p.previous_success) AS previous_success
    FROM sessions s LEFT JOIN prior p USING (org_id, user_id, task_type)
)
SELECT org_id, task_type, CAST(started_at AS DATE) AS day,
       count(*) AS sessions,
       count(*) FILTER (WHERE has_outcome) AS sessions_with_outcome,
       count(*) FILTER (WHERE verified) AS verified_sessions,
       count(*) FILTER (WHERE verified AND success) AS verified_successes,
       count(*) FILTER (WHERE verified AND NOT success) AS verified_failures,
       count(*) FILTER (WHERE verified AND NOT success AND NOT previous_success) AS repeated_failures
FROM sequenced
GROUP BY ALL
