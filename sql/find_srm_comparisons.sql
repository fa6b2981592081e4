-- Comparisons of one look ($as_of; NULL: the latest) whose allocation check fires
-- ($threshold on the anytime-valid sequential SRM p-value).
SELECT experiment_id, treatment_arm, srm_units_control, srm_units_treatment, srm_sequential_p, srm_chisquare_p
FROM experiment_analysis
WHERE as_of = coalesce(CAST($as_of AS DATE), (SELECT max(as_of) FROM experiment_analysis))
  AND is_primary AND srm_sequential_p < $threshold
ORDER BY srm_sequential_p, experiment_id, treatment_arm
