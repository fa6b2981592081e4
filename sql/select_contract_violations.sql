-- Rows of each experiment per UTC day and epoch, and how many of them were quarantined, as of
-- one look ($as_of_end), from the stored daily counts (look_violation_days).
-- Registered frame: epoch_bounds(experiment_id, epoch, starts_at).
SELECT d.experiment_id, coalesce(max(b.epoch), 0) AS epoch, d.day, d.bad, d.total
FROM look_violation_days d
LEFT JOIN epoch_bounds b ON b.experiment_id = d.experiment_id AND CAST(b.starts_at AS DATE) <= d.day
WHERE d.day < CAST($as_of_end AS DATE)
GROUP BY d.experiment_id, d.day, d.bad, d.total
ORDER BY 1, 3
