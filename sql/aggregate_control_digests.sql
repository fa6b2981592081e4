-- The context digests of each experiment's control sessions per epoch and UTC day, for the
-- days on and after each dirty experiment's from_day (registered frames: dirty(experiment_id,
-- from_day), epoch_bounds(experiment_id, epoch, starts_at); a reopen starts an epoch):
-- select_control_drift.sql finds the first day a second digest appeared. $from_at: the
-- earliest from_day.
WITH control AS (
    SELECT x.experiment_id, x.context_digest, x.assigned_at
    FROM experience x JOIN dirty d USING (experiment_id)
    WHERE x.is_control AND x.context_digest IS NOT NULL AND x.assigned_at >= $from_at
      AND CAST(x.assigned_at AS DATE) >= d.from_day
), epoch_of AS (
    SELECT c.experiment_id, coalesce(max(b.epoch), 0) AS epoch, c.context_digest, c.assigned_at
    FROM control c LEFT JOIN epoch_bounds b
      ON b.experiment_id = c.experiment_id AND b.starts_at <= c.assigned_at
    GROUP BY c.experiment_id, c.context_digest, c.assigned_at
)
SELECT DISTINCT experiment_id, CAST(epoch AS BIGINT) AS epoch, context_digest, CAST(assigned_at AS DATE) AS day FROM epoch_of
