-- Staged assignments of a run's days ($days) whose experiment is not registered or does not
-- declare their arm.
SELECT a.session_id, a.experiment_id, a.arm
FROM staged_assignments a LEFT JOIN staged_experiments e USING (experiment_id)
WHERE a.partition_day IN (SELECT CAST(unnest($days::VARCHAR[]) AS DATE))
  AND (e.experiment_id IS NULL
       OR NOT list_contains(CAST(json_extract_string(e.arms, '$[*].name') AS VARCHAR[]), a.arm))
LIMIT 20
