-- Each dirty experiment's first assignment per epoch (registered frame dirty(experiment_id,
-- from_day)). Epoch 0: the stored one where it lies before from_day (nothing before from_day
-- changed), else the first among the rows from from_day on. Every later epoch (registered
-- frame epoch_bounds(experiment_id, epoch, starts_at): its reopened event): the first
-- assignment of a unit first assigned at or after the reopen, for burn-in starts again with
-- the units of the new epoch (a user is a unit of the epoch of its earliest assignment).
WITH stored AS (
    SELECT f.experiment_id, f.first_assigned_at FROM look_first_assignments f JOIN dirty d USING (experiment_id)
    WHERE f.epoch = 0 AND CAST(f.first_assigned_at AS DATE) < d.from_day
), recent AS (
    SELECT x.experiment_id, min(x.assigned_at) AS first_assigned_at FROM experience x JOIN dirty d USING (experiment_id)
    WHERE x.assigned_at >= $from_at AND CAST(x.assigned_at AS DATE) >= d.from_day
    GROUP BY ALL
), reopened AS (
    SELECT b.experiment_id, b.epoch, b.starts_at, e.randomization_unit = 'user' AS by_user
    FROM epoch_bounds b JOIN dirty d USING (experiment_id) JOIN staged_experiments e USING (experiment_id)
), unit_first AS (
    SELECT r.experiment_id, r.epoch, r.starts_at,
           CASE WHEN r.by_user THEN x.unit_id ELSE x.session_id END AS unit, min(x.assigned_at) AS first_assigned_at
    FROM experience x JOIN reopened r USING (experiment_id)
    GROUP BY ALL
)
SELECT d.experiment_id, CAST(0 AS BIGINT) AS epoch, coalesce(s.first_assigned_at, r.first_assigned_at) AS first_assigned_at
FROM dirty d LEFT JOIN stored s USING (experiment_id) LEFT JOIN recent r USING (experiment_id)
WHERE coalesce(s.first_assigned_at, r.first_assigned_at) IS NOT NULL
UNION ALL
SELECT experiment_id, CAST(epoch AS BIGINT) AS epoch, min(first_assigned_at) AS first_assigned_at
FROM unit_first WHERE first_assigned_at >= starts_at
GROUP BY experiment_id, epoch
