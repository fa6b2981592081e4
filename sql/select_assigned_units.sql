-- Units assigned per experiment, arm and stratum, cumulative, on every UTC day a unit was
-- first assigned, as of one look ($as_of_end): the running sums of the stored daily counts
-- (look_assigned_days, aggregate_assigned_day_units.sql).
SELECT experiment_id, arm, segment, day,
       CAST(sum(new_units) OVER (PARTITION BY experiment_id, arm, segment ORDER BY day ROWS UNBOUNDED PRECEDING) AS BIGINT) AS units
FROM look_assigned_days
WHERE day < CAST($as_of_end AS DATE)
ORDER BY experiment_id, arm, segment, day
