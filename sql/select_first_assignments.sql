-- When each experiment's data starts as of one look ($as_of_end): its first assignment
-- (look_first_assignments), or its registration for an aggregate export (whose time
-- 0 is the start).
SELECT e.experiment_id,
       coalesce(CASE WHEN f.first_assigned_at < $as_of_end THEN f.first_assigned_at END,
                CASE WHEN s.experiment_id IS NOT NULL THEN e.registered_at END) AS first_assigned_at
FROM staged_experiments e
LEFT JOIN look_first_assignments f USING (experiment_id)
LEFT JOIN (SELECT DISTINCT experiment_id FROM staged_arm_snapshots WHERE "at" < $as_of_end) s
    ON s.experiment_id = e.experiment_id
