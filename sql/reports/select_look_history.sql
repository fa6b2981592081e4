-- The primary comparisons of every look on or before $as_of (NULL: every look), oldest first:
-- the history of each experiment's interval over nights.
SELECT *
FROM experiment_analysis
WHERE is_primary AND (CAST($as_of AS DATE) IS NULL OR as_of <= CAST($as_of AS DATE))
ORDER BY experiment_id, treatment_arm, as_of
