-- Comparisons of one look ($as_of; NULL: the latest) whose allocation check fired: the look's
-- own verdict (srm_fired, set where the sequential SRM p-value fell below its level).
SELECT experiment_id, treatment_arm, srm_units_control, srm_units_treatment, srm_sequential_p, srm_chisquare_p
FROM experiment_analysis
WHERE as_of = coalesce(CAST($as_of AS DATE), (SELECT max(as_of) FROM experiment_analysis))
  AND is_primary AND srm_fired
ORDER BY srm_sequential_p, experiment_id, treatment_arm
