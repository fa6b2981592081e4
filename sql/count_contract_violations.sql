-- Rows of each experiment per UTC day and epoch, and how many of them were quarantined:
-- assignments (contract and experience stages) and outcomes of its sessions; for
-- aggregate exports, the snapshot rows of its primary metric. Registered frames:
-- epoch_bounds(experiment_id, epoch, starts_at); quarantined_keys(source_table, stage,
-- partition_day, experiment_id, session_id, metric), the keys read from the quarantined
-- records (look.py; a malformed record has none).
WITH q AS (
    SELECT * FROM quarantined_keys WHERE partition_day IS NOT NULL
), rows_of AS (
    SELECT experiment_id, partition_day AS day, 0 AS bad FROM staged_assignments
    UNION ALL
    SELECT s.experiment_id, o.partition_day, 0 FROM staged_outcomes o JOIN staged_sessions s USING (session_id)
    WHERE s.experiment_id IS NOT NULL
    UNION ALL
    SELECT experiment_id, partition_day, 1 FROM q
    WHERE source_table = 'assignments' AND stage IN ('contract', 'experience')
    UNION ALL
    SELECT s.experiment_id, q.partition_day, 1 FROM q JOIN staged_sessions s USING (session_id)
    WHERE q.source_table = 'outcomes' AND q.stage = 'contract' AND s.experiment_id IS NOT NULL
    UNION ALL
    SELECT a.experiment_id, a.partition_day, 0 FROM staged_arm_snapshots a
    JOIN staged_experiments e ON e.experiment_id = a.experiment_id AND a.metric = e.primary_metric
    UNION ALL
    SELECT q.experiment_id, q.partition_day, 1 FROM q
    JOIN staged_experiments e ON e.experiment_id = q.experiment_id AND q.metric = e.primary_metric
    WHERE q.source_table = 'arm_snapshots' AND q.stage = 'contract'
), daily AS (
    SELECT experiment_id, day, CAST(sum(bad) AS BIGINT) AS bad, count(*) AS total FROM rows_of
    WHERE experiment_id IS NOT NULL AND day < CAST($as_of_end AS DATE)
    GROUP BY ALL
)
SELECT d.experiment_id, coalesce(max(b.epoch), 0) AS epoch, d.day, d.bad, d.total
FROM daily d LEFT JOIN epoch_bounds b ON b.experiment_id = d.experiment_id AND CAST(b.starts_at AS DATE) <= d.day
GROUP BY d.experiment_id, d.day, d.bad, d.total
ORDER BY 1, 3
