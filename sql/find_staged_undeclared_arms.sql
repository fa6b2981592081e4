SELECT a.session_id, a.experiment_id, a.arm
FROM staged_assignments a LEFT JOIN staged_experiments e USING (experiment_id)
WHERE e.experiment_id IS NULL
   OR NOT list_contains(CAST(json_extract_string(e.arms, '$[*].name') AS VARCHAR[]), a.arm)
LIMIT 20
