-- Each dirty experiment's first assignment (registered frame dirty(experiment_id, from_day)):
-- the stored one where it lies before from_day (nothing before from_day changed), else the
-- first among the rows from from_day on.
WITH stored AS (
    SELECT f.experiment_id, f.first_assigned_at FROM look_first_assignments f JOIN dirty d USING (experiment_id)
    WHERE CAST(f.first_assigned_at AS DATE) < d.from_day
), recent AS (
    SELECT x.experiment_id, min(x.assigned_at) AS first_assigned_at FROM experience x JOIN dirty d USING (experiment_id)
    WHERE x.assigned_at >= $from_at AND CAST(x.assigned_at AS DATE) >= d.from_day
    GROUP BY ALL
)
SELECT d.experiment_id, coalesce(s.first_assigned_at, r.first_assigned_at) AS first_assigned_at
FROM dirty d LEFT JOIN stored s USING (experiment_id) LEFT JOIN recent r USING (experiment_id)
WHERE coalesce(s.first_assigned_at, r.first_assigned_at) IS NOT NULL
