-- When each experiment's data starts: its first assignment, or its registration for an
-- aggregate export (whose time 0 is the start).
SELECT e.experiment_id,
       coalesce(min(x.assigned_at), CASE WHEN bool_or(s.experiment_id IS NOT NULL) THEN e.registered_at END)
           AS first_assigned_at
FROM staged_experiments e
LEFT JOIN experience x ON x.experiment_id = e.experiment_id AND x.assigned_at < $as_of_end
LEFT JOIN (SELECT DISTINCT experiment_id FROM staged_arm_snapshots WHERE "at" < $as_of_end) s
    ON s.experiment_id = e.experiment_id
GROUP BY e.experiment_id, e.registered_at
