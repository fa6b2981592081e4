-- Baseline drift as of one look ($as_of_end): the first UTC day a second context digest
-- appeared among the control arm's sessions, per experiment and epoch, from the stored
-- digests per day (look_control_digests).
WITH first_seen AS (
    SELECT experiment_id, epoch, context_digest, min(day) AS day FROM look_control_digests
    WHERE day < CAST($as_of_end AS DATE) GROUP BY ALL
)
SELECT experiment_id, epoch, list_sort(list(day))[2] AS drift_day
FROM first_seen GROUP BY ALL HAVING count(*) >= 2
ORDER BY ALL
