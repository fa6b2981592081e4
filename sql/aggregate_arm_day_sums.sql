-- The daily sums of the look: per experiment, metric, arm, stratum and UTC day, the change of
-- the arm's exact sufficient statistics on that day, for the days on and after each dirty
-- experiment's from_day (registered frame dirty(experiment_id, from_day); a first build has
-- every experiment from the first day). Tonight's cumulative statistics are the sums of the
-- stored changes up to tonight (select_arm_statistics.sql), so a night computes only the days
-- its changes touch.
-- An observation enters on the later of its assignment day and its recording day; only
-- verified outcomes enter; time and tokens are capped at the registered metric_caps.
--
-- The unit is the randomization unit. For each unit, day by day: Y (sum of its values), M
-- (its observations) and its mean v = Y / M. The arm's sums of v, v^2, Y, Y^2, M, M^2, Y M
-- change on that day by the unit's new state minus its previous state, so cumulative sums
-- over days give the exact sums over units at every look (Deng, Lu, Litz 2018 for Y, M).
-- Only units with an observation on or after from_day change on those days; a unit's path is
-- taken over all its days, so its change on a day is exact whatever came before.
--
-- Exactness (a rerun is bit-identical, and so is any split of the days between nights):
-- values are rounded once to the metric's resolution (registered frame analysed_metrics) and
-- unit means to resolution / 1e6, and every sum is a HUGEINT, so the order of summation
-- cannot change a result.
-- Registered frames: analysed_metrics(experiment_id, metric, resolution),
-- segment_bounds(experiment_id, segment, starts_at); $from_at: the earliest from_day (a bound
-- that lets the scans skip older rows).
--
-- A session's outcome as of a night is its latest authoritative outcome recorded by then: a
-- session with several (a re-evaluation, a corrected outcome) enters with its first and
-- changes on the day of each later one, so a correction never removes it from earlier nights.
-- Registered table: verification_records (every outcome, authoritative or not).
--
-- A session-randomized experiment's unit is one row of the experience table: with one
-- authoritative outcome it is observed once per metric, on one day, so its change is its whole
-- state and it needs no grouping by unit or day; user-randomized units and revised sessions
-- take the path by unit and day. An experiment without a declared allocation change has one
-- stratum (0).
-- CUPED: each unit's covariate (look_unit_covariates, aggregate_unit_covariates.sql) enters as
-- the sums of x, x^2, x v, h and h v (h: the unit has one), exact like the rest.
WITH registered AS (
    SELECT e.experiment_id, e.randomization_unit, d.from_day,
           TRY_CAST(json_extract_string(e.metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(e.metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM staged_experiments e JOIN dirty d USING (experiment_id)
), keyed AS NOT MATERIALIZED (
    SELECT x.*, CASE WHEN r.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END AS unit,
           r.randomization_unit = 'user' AS by_user, x.authoritative_outcomes > 1 AS revised,
           r.cap_time, r.cap_tokens, r.from_day
    FROM experience x JOIN registered r USING (experiment_id)
), recent AS NOT MATERIALIZED (
    -- experience rows that can change a sum on or after $from_at: assigned then, or recorded then
    SELECT * FROM keyed WHERE assigned_at >= $from_at
    UNION ALL SELECT * FROM keyed WHERE assigned_at < $from_at AND recorded_at >= $from_at
), touched AS (
    -- the units whose path changes on or after their experiment's from_day
    SELECT DISTINCT experiment_id, unit FROM recent
    WHERE (by_user OR revised) AND CAST(greatest(assigned_at, coalesce(recorded_at, assigned_at)) AS DATE) >= from_day
), pathed AS NOT MATERIALIZED (
    -- every row of the units that take a path: those of user-randomized experiments and the revised
    -- sessions of the others, in two branches so that each filter reaches the scan (without a
    -- user-randomized experiment the first reads nothing, and the second skips the stored blocks
    -- without a revised session), not the whole table read to find the touched units' rows
    SELECT * FROM keyed WHERE by_user
    UNION ALL SELECT * FROM keyed WHERE revised AND by_user IS NOT TRUE
), assigned AS NOT MATERIALIZED (
    SELECT * FROM recent
    WHERE NOT by_user AND NOT revised AND CAST(greatest(assigned_at, coalesce(recorded_at, assigned_at)) AS DATE) >= from_day
    UNION ALL
    SELECT k.* FROM pathed k SEMI JOIN touched t ON t.experiment_id = k.experiment_id AND t.unit = k.unit
), unit_first AS (
    SELECT experiment_id, unit, min(assigned_at) AS first_assigned_at FROM assigned
    WHERE by_user OR revised GROUP BY ALL
), unit_segment AS (
    SELECT u.experiment_id, u.unit, coalesce(max(b.segment), 0) AS segment
    FROM unit_first u LEFT JOIN segment_bounds b
      ON b.experiment_id = u.experiment_id AND b.starts_at <= u.first_assigned_at
    GROUP BY ALL
), session_segment AS (
    -- a session unit's stratum, in experiments with declared allocation changes only
    SELECT a.experiment_id, a.unit, max(b.segment) AS segment
    FROM assigned a JOIN segment_bounds b ON b.experiment_id = a.experiment_id AND b.starts_at <= a.assigned_at
    WHERE NOT a.by_user
    GROUP BY ALL
), measured AS (
    -- one row per analysed (observation, metric): each metric read only where it is analysed,
    -- capped (sql/fragments/value_of_metric.sql)
    SELECT a.*, am.metric, am.resolution, {{value_of_metric}} AS value
    FROM assigned a JOIN analysed_metrics am ON am.experiment_id = a.experiment_id
    WHERE a.verified AND NOT a.revised
), versions AS (
    -- a revised session: every authoritative outcome, with the caps of its experiment
    SELECT a.experiment_id, a.arm, a.unit, a.user_id, a.by_user, a.session_id, a.cap_time, a.cap_tokens,
           CAST(greatest(a.assigned_at, v.recorded_at) AS DATE) AS revision_day,
           v.success, v.time_minutes, v.tokens, v.score, v.recorded_at, v.evaluator_id, v.evaluator_version
    FROM assigned a JOIN verification_records v ON v.session_id = a.session_id
    WHERE a.revised AND v.authoritative
), revisions AS (
    -- each version's value of every analysed metric, in the order that puts the experience
    -- table's choice (latest, then evaluator id, then version) last
    SELECT w.experiment_id, w.arm, w.unit, w.user_id, w.by_user, w.session_id, am.metric, am.resolution,
           w.revision_day, CAST(round({{value_of_metric}} / am.resolution) AS HUGEINT) AS y,
           w.recorded_at, w.evaluator_id, w.evaluator_version
    FROM versions w JOIN analysed_metrics am ON am.experiment_id = w.experiment_id
), revision_changes AS (
    -- each version replaces the one before: its value minus the previous one, and one
    -- observation more or less when a value appears or disappears (a version without it)
    SELECT *, lag(y) OVER (PARTITION BY experiment_id, session_id, metric
                           ORDER BY recorded_at, evaluator_id DESC, evaluator_version DESC) AS previous_y
    FROM revisions
), observed AS NOT MATERIALIZED (
    SELECT experiment_id, arm, unit, user_id, metric, by_user, false AS revised,
           CAST(round(value / resolution) AS HUGEINT) AS y, CAST(1 AS HUGEINT) AS m,
           CAST(greatest(assigned_at, recorded_at) AS DATE) AS day,
           resolution
    FROM measured WHERE value IS NOT NULL
    UNION ALL
    SELECT experiment_id, arm, unit, user_id, metric, by_user, true AS revised,
           coalesce(y, 0) - coalesce(previous_y, 0) AS y,
           CAST(CAST(y IS NOT NULL AS INTEGER) - CAST(previous_y IS NOT NULL AS INTEGER) AS HUGEINT) AS m,
           revision_day AS day, resolution
    FROM revision_changes
), unit_day AS (
    SELECT experiment_id, arm, unit, metric, day, any_value(resolution) AS resolution, any_value(user_id) AS user_id,
           sum(y) AS dy, sum(m) AS dm, bool_or(revised) AS revised
    FROM observed WHERE by_user OR revised GROUP BY experiment_id, arm, unit, metric, day
), repeated AS (
    -- units observed on more than one day, and revised sessions: only their paths need
    -- windows over days
    SELECT experiment_id, arm, unit, metric FROM unit_day GROUP BY ALL HAVING count(*) > 1 OR bool_or(revised)
), unit_path AS (
    SELECT *,
           sum(dy) OVER w AS y_now, sum(dm) OVER w AS m_now
    FROM unit_day SEMI JOIN repeated USING (experiment_id, arm, unit, metric)
    WINDOW w AS (PARTITION BY experiment_id, arm, unit, metric ORDER BY day ROWS UNBOUNDED PRECEDING)
), unit_state AS (
    -- exact HUGEINT, rounded mean; 0 while a revised session has no value of the metric
    SELECT *, CASE WHEN m_now > 0 THEN CAST(round(y_now * 1000000 / m_now) AS HUGEINT) ELSE 0 END AS v_now
    FROM unit_path
), unit_change AS (
    SELECT s.experiment_id, s.arm, s.metric, g.segment, s.day, s.resolution, s.user_id,
           CAST(s.m_now > 0 AS INTEGER) - coalesce(CAST(lag(s.m_now) OVER w > 0 AS INTEGER), 0) AS dn,
           s.v_now - coalesce(lag(s.v_now) OVER w, 0) AS dv,
           s.v_now * s.v_now - coalesce(lag(s.v_now * s.v_now) OVER w, 0) AS dv2,
           s.dy, s.y_now * s.y_now - coalesce(lag(s.y_now * s.y_now) OVER w, 0) AS dy2,
           s.dm, s.m_now * s.m_now - coalesce(lag(s.m_now * s.m_now) OVER w, 0) AS dm2,
           s.y_now * s.m_now - coalesce(lag(s.y_now * s.m_now) OVER w, 0) AS dym
    FROM unit_state s JOIN unit_segment g USING (experiment_id, unit)
    WINDOW w AS (PARTITION BY s.experiment_id, s.arm, s.unit, s.metric ORDER BY s.day)
    UNION ALL
    -- a unit seen on one day: its change is its whole state (the same figures, without windows)
    SELECT d.experiment_id, d.arm, d.metric, g.segment, d.day, d.resolution, d.user_id,
           1 AS dn, v.v_now AS dv, v.v_now * v.v_now AS dv2,
           d.dy, d.dy * d.dy AS dy2, d.dm, d.dm * d.dm AS dm2, d.dy * d.dm AS dym
    FROM unit_day d ANTI JOIN repeated USING (experiment_id, arm, unit, metric)
    JOIN unit_segment g USING (experiment_id, unit)
    CROSS JOIN LATERAL (SELECT CAST(round(d.dy * 1000000 / d.dm) AS HUGEINT) AS v_now) v
    UNION ALL
    -- a session unit: one observation (M = 1) on one day, its change is its whole state
    SELECT o.experiment_id, o.arm, o.metric, coalesce(g.segment, 0) AS segment, o.day, o.resolution, o.user_id,
           1 AS dn, v.v_now AS dv, v.v_now * v.v_now AS dv2,
           o.y AS dy, o.y * o.y AS dy2, CAST(1 AS HUGEINT) AS dm, CAST(1 AS HUGEINT) AS dm2, o.y AS dym
    FROM observed o LEFT JOIN session_segment g USING (experiment_id, unit)
    CROSS JOIN LATERAL (SELECT CAST(round(o.y * 1000000 / 1) AS HUGEINT) AS v_now) v
    WHERE NOT o.by_user AND NOT o.revised
), covaried AS (
    -- the CUPED covariate z = (x, h) of the unit's user (look_unit_covariates: 0 and h = 0 without
    -- one) is fixed, so the sums of x, x^2 and h change when the unit enters (dn) and those of
    -- x v and h v with its mean (dv)
    SELECT c.*, coalesce(k.x, 0) AS x, CAST(k.x IS NOT NULL AS INTEGER) AS h
    FROM unit_change c LEFT JOIN look_unit_covariates k
      ON k.experiment_id = c.experiment_id AND k.metric = c.metric AND k.user_id = c.user_id
)
SELECT c.experiment_id, c.arm, c.metric, c.segment, c.day, any_value(c.resolution) AS resolution,
       sum(dn) AS dn, sum(dv) AS dv, sum(dv2) AS dv2, sum(dy) AS dy, sum(dy2) AS dy2,
       sum(dm) AS dm, sum(dm2) AS dm2, sum(dym) AS dym,
       sum(x * dn) AS dx, sum(x * x * dn) AS dx2, sum(x * dv) AS dxv, sum(h * dn) AS dh, sum(h * dv) AS dhv
FROM covaried c JOIN dirty d ON d.experiment_id = c.experiment_id AND c.day >= d.from_day
GROUP BY c.experiment_id, c.arm, c.metric, c.segment, c.day
