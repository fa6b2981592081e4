-- Units assigned per experiment, arm and stratum, cumulative, on every UTC day a unit was
-- first assigned (verified or not): the counts of the sample-ratio test. A unit belongs to
-- the stratum of its first assignment. Registered frame: segment_bounds(experiment_id,
-- segment, starts_at). A session-randomized experiment's rows are its units (one row per
-- session), and an experiment without a declared allocation change has one stratum (0), so
-- only user-randomized units are grouped and only changed experiments joined to their bounds.
WITH assigned AS NOT MATERIALIZED (
    SELECT * FROM experience x WHERE x.assigned_at < $as_of_end
), units AS (
    SELECT x.experiment_id, x.arm, x.session_id AS unit, x.assigned_at AS first_assigned_at
    FROM assigned x WHERE x.randomization_unit <> 'user'
    UNION ALL
    SELECT x.experiment_id, x.arm, x.unit_id AS unit, min(x.assigned_at) AS first_assigned_at
    FROM assigned x WHERE x.randomization_unit = 'user'
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
), per_day AS (
    SELECT experiment_id, arm, segment, day, count(*) AS new_units FROM daily GROUP BY ALL
)
SELECT experiment_id, arm, segment, day,
       CAST(sum(new_units) OVER (PARTITION BY experiment_id, arm, segment ORDER BY day ROWS UNBOUNDED PRECEDING) AS BIGINT) AS units
FROM per_day
ORDER BY experiment_id, arm, segment, day
