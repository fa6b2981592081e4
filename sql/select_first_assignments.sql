-- When each experiment's data starts, per epoch, as of one look ($as_of_end): epoch 0's first
-- assignment (look_first_assignments), or its registration for an aggregate export (whose time
-- 0 is the start); each later epoch's first assignment after its reopened event.
SELECT e.experiment_id, CAST(0 AS BIGINT) AS epoch,
       coalesce(CASE WHEN f.first_assigned_at < $as_of_end THEN f.first_assigned_at END,
                CASE WHEN s.experiment_id IS NOT NULL THEN e.registered_at END) AS first_assigned_at
FROM staged_experiments e
LEFT JOIN (SELECT * FROM look_first_assignments WHERE epoch = 0) f USING (experiment_id)
LEFT JOIN (SELECT DISTINCT experiment_id FROM staged_arm_snapshots WHERE "at" < $as_of_end) s
    ON s.experiment_id = e.experiment_id
UNION ALL
SELECT experiment_id, epoch, first_assigned_at FROM look_first_assignments
WHERE epoch > 0 AND first_assigned_at < $as_of_end
