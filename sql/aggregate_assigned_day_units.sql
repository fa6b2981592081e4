-- Units first assigned per experiment, arm, stratum and UTC day (verified or not), for the
-- days on and after each dirty experiment's from_day (registered frame dirty(experiment_id,
-- from_day)): the daily counts of the sample-ratio test; select_assigned_units.sql sums them.
-- A unit belongs to the stratum of its first assignment. A session-randomized experiment's
-- rows are its units (one row per session); a user is followed over all its rows, but only
-- users with a row on or after from_day can be first assigned then. Registered frame:
-- segment_bounds(experiment_id, segment, starts_at); $from_at: the earliest from_day.
WITH registered AS (
    SELECT e.experiment_id, e.randomization_unit = 'user' AS by_user, d.from_day
    FROM staged_experiments e JOIN dirty d USING (experiment_id)
), sessions AS (
    SELECT x.experiment_id, x.arm, x.session_id AS unit, x.assigned_at AS first_assigned_at
    FROM experience x JOIN registered r USING (experiment_id)
    WHERE NOT r.by_user AND x.assigned_at >= $from_at AND CAST(x.assigned_at AS DATE) >= r.from_day
), users AS (
    SELECT DISTINCT x.experiment_id, x.unit_id FROM experience x JOIN registered r USING (experiment_id)
    WHERE r.by_user AND x.assigned_at >= $from_at AND CAST(x.assigned_at AS DATE) >= r.from_day
), units AS (
    SELECT * FROM sessions
    UNION ALL
    SELECT x.experiment_id, x.arm, x.unit_id AS unit, min(x.assigned_at) AS first_assigned_at
    FROM experience x SEMI JOIN users USING (experiment_id, unit_id)
    GROUP BY ALL
), changed AS (
    SELECT DISTINCT experiment_id FROM segment_bounds
), daily AS (
    SELECT u.experiment_id, u.arm, 0 AS segment, CAST(u.first_assigned_at AS DATE) AS day
    FROM units u ANTI JOIN changed USING (experiment_id)
    UNION ALL
    SELECT u.experiment_id, u.arm, coalesce(max(b.segment), 0) AS segment, CAST(u.first_assigned_at AS DATE) AS day
    FROM units u SEMI JOIN changed USING (experiment_id)
    LEFT JOIN segment_bounds b ON b.experiment_id = u.experiment_id AND b.starts_at <= u.first_assigned_at
    GROUP BY u.experiment_id, u.arm, u.unit, u.first_assigned_at
)
SELECT d.experiment_id, d.arm, CAST(d.segment AS BIGINT) AS segment, d.day, count(*) AS new_units
FROM daily d JOIN registered r ON r.experiment_id = d.experiment_id AND d.day >= r.from_day
GROUP BY ALL
