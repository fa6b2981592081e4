-- Cumulative per-arm figures of aggregate exports, as of one look: for every UTC day, the
-- last snapshot of that day per experiment, arm and metric (a look reads the latest
-- cumulative figures at or before it, never a sum of snapshots).
SELECT experiment_id, arm, metric, CAST("at" AS DATE) AS day, n, mean, variance
FROM (
    SELECT *, row_number() OVER (
        PARTITION BY experiment_id, arm, metric, CAST("at" AS DATE)
        ORDER BY "at" DESC, source_file DESC, source_row DESC) AS k
    FROM staged_arm_snapshots WHERE "at" < $as_of_end
) WHERE k = 1
ORDER BY experiment_id, metric, arm, day
