-- Baseline drift: the first UTC day a second context digest appeared among the control
-- arm's sessions, per experiment and epoch (a reopen starts an epoch). Registered frame:
-- epoch_bounds(experiment_id, epoch, starts_at).
WITH control AS (
    SELECT x.experiment_id, x.context_digest, x.assigned_at
    FROM experience x
    WHERE x.is_control AND x.assigned_at < $as_of_end AND x.context_digest IS NOT NULL
), epoch_of AS (
    SELECT c.experiment_id, coalesce(max(b.epoch), 0) AS epoch, c.context_digest, c.assigned_at
    FROM control c LEFT JOIN epoch_bounds b
      ON b.experiment_id = c.experiment_id AND b.starts_at <= c.assigned_at
    GROUP BY c.experiment_id, c.context_digest, c.assigned_at
), first_seen AS (
    SELECT experiment_id, epoch, context_digest, min(CAST(assigned_at AS DATE)) AS day FROM epoch_of GROUP BY ALL
)
SELECT experiment_id, epoch, list_sort(list(day))[2] AS drift_day
FROM first_seen GROUP BY ALL HAVING count(*) >= 2
ORDER BY ALL
