-- Every comparison of each experiment's latest look on or before $as_of (NULL: the latest
-- look of each experiment), so an experiment not analysed last night still shows its last look.
SELECT a.*
FROM experiment_analysis a
JOIN (
    SELECT experiment_id, max(as_of) AS as_of
    FROM experiment_analysis
    WHERE CAST($as_of AS DATE) IS NULL OR as_of <= CAST($as_of AS DATE)
    GROUP BY experiment_id
) latest USING (experiment_id, as_of)
ORDER BY experiment_id, NOT is_primary, metric, treatment_arm
