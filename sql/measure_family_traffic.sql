-- What each new registration's organization and task type showed in the 28 days before it
-- registered. Registered frame: new_registrations(experiment_id, org_id, task_type,
-- randomization_unit, registered_at).
--   traffic_per_day: units a day: sessions, or distinct users for a user-randomized experiment;
--   verified_share, success_rate: the share of those sessions with an authoritative outcome, and
--     the success rate among them (each session's latest authoritative outcome; ties: the first
--     evaluator id, then version, as in the experience);
--   history_users, sessions_per_user, user_rate_variance: the users with a verified session, their
--     verified sessions each on average, and the sample variance across them of each user's
--     success rate: what the variance of a per-user mean is, for a user-randomized plan (0 and
--     NULL for a session-randomized one, which does not read them);
--   cuped_*: what CUPED would have removed had an experiment started 28 days before registration:
--     over the units of those 28 days (sessions, or users with their mean), the sums of the unit's
--     success v, of its covariate x (its user's mean success over the 28 days before them, 0 if
--     none) and of the indicator h that it has one: n, v, v^2, x, x^2, h, x v, h v (x h = x).
WITH span AS MATERIALIZED (
    SELECT r.experiment_id, r.randomization_unit, s.session_id, s.user_id,
           s.started_at < r.registered_at - INTERVAL 28 DAY AS before
    FROM new_registrations r
    LEFT JOIN staged_sessions s
      ON s.org_id = r.org_id AND s.task_type = r.task_type
     AND s.started_at < r.registered_at AND s.started_at >= r.registered_at - INTERVAL 56 DAY
), recent AS MATERIALIZED (
    -- the 28 days before registration (a registration without any session keeps its row)
    SELECT r.experiment_id, r.randomization_unit, w.session_id, w.user_id
    FROM new_registrations r LEFT JOIN span w ON w.experiment_id = r.experiment_id AND NOT w.before
), authoritative AS (
    SELECT v.session_id, v.success, v.recorded_at, v.evaluator_id, v.evaluator_version
    FROM verification_records v SEMI JOIN span r USING (session_id)
    WHERE v.authoritative
), counted AS (
    SELECT session_id, count(*) AS outcomes, max(CAST(success AS DOUBLE)) AS success
    FROM authoritative GROUP BY session_id
), verified AS MATERIALIZED (
    -- a session with one authoritative outcome takes it; only those with several need the ordering
    SELECT session_id, success FROM counted WHERE outcomes = 1
    UNION ALL
    SELECT session_id, success FROM (
        SELECT a.session_id, CAST(a.success AS DOUBLE) AS success,
               row_number() OVER (PARTITION BY a.session_id ORDER BY a.recorded_at DESC, a.evaluator_id, a.evaluator_version) AS k
        FROM authoritative a SEMI JOIN counted c ON c.session_id = a.session_id AND c.outcomes > 1
    ) WHERE k = 1
), sessions AS (
    SELECT r.experiment_id,
           CASE WHEN any_value(r.randomization_unit) = 'user' THEN count(DISTINCT r.user_id) ELSE count(r.session_id) END / 28.0
               AS traffic_per_day,
           count(v.session_id) / nullif(count(r.session_id), 0) AS verified_share, avg(v.success) AS success_rate
    FROM recent r LEFT JOIN verified v USING (session_id)
    GROUP BY r.experiment_id
), covariate AS (
    SELECT w.experiment_id, w.user_id, avg(v.success) AS x
    FROM span w JOIN verified v USING (session_id)
    WHERE w.before AND v.success IS NOT NULL AND w.user_id IS NOT NULL
    GROUP BY ALL
), cuped_units AS (
    SELECT r.experiment_id, CASE WHEN r.randomization_unit = 'user' THEN r.user_id ELSE r.session_id END AS unit,
           any_value(r.user_id) AS user_id, avg(v.success) AS y
    FROM recent r JOIN verified v USING (session_id)
    WHERE v.success IS NOT NULL
    GROUP BY ALL
), cuped AS (
    SELECT u.experiment_id, count(*) AS cuped_n, sum(u.y) AS cuped_sv, sum(u.y * u.y) AS cuped_svv,
           coalesce(sum(c.x), 0) AS cuped_sx, coalesce(sum(c.x * c.x), 0) AS cuped_sxx,
           count(c.x) AS cuped_sh, coalesce(sum(c.x * u.y), 0) AS cuped_sxv,
           coalesce(sum(CASE WHEN c.x IS NOT NULL THEN u.y END), 0) AS cuped_shv
    FROM cuped_units u LEFT JOIN covariate c ON c.experiment_id = u.experiment_id AND c.user_id = u.user_id
    GROUP BY u.experiment_id
), users AS (
    SELECT experiment_id, count(*) AS history_users, avg(sessions) AS sessions_per_user, var_samp(rate) AS user_rate_variance
    FROM (
        SELECT r.experiment_id, r.user_id, count(*) AS sessions, avg(v.success) AS rate
        FROM recent r JOIN verified v USING (session_id)
        WHERE v.success IS NOT NULL AND r.randomization_unit = 'user'  -- only a user-randomized plan reads them
        GROUP BY ALL
    ) GROUP BY experiment_id
)
SELECT s.experiment_id, s.traffic_per_day, s.verified_share, s.success_rate,
       coalesce(u.history_users, 0) AS history_users, u.sessions_per_user, u.user_rate_variance,
       coalesce(c.cuped_n, 0) AS cuped_n, c.cuped_sv, c.cuped_svv, c.cuped_sx, c.cuped_sxx, c.cuped_sh,
       c.cuped_sxv, c.cuped_shv
FROM sessions s LEFT JOIN users u USING (experiment_id) LEFT JOIN cuped c USING (experiment_id)
