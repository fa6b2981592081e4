-- The last staged snapshot at or before the look per experiment, arm and metric: a look
-- reads the latest cumulative figures, never a sum of snapshots.
SELECT experiment_id, arm, metric, n, mean, variance, "at"
FROM (
    SELECT *, row_number() OVER (PARTITION BY experiment_id, arm, metric ORDER BY "at" DESC, source_file DESC, source_row DESC) AS k
    FROM staged_arm_snapshots WHERE "at" < $as_of_end
) WHERE k = 1
ORDER BY experiment_id, metric, arm
