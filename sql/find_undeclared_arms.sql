-- Rows of `subject` (assignments, arm snapshots) whose arm is not declared by their experiment.
SELECT c.partition_day, c.source_file, c.source_row,
       'arm ' || c.arm || ' is not declared by experiment ' || c.experiment_id AS reason
FROM subject c JOIN staged_experiments e USING (experiment_id)
WHERE NOT list_contains(CAST(json_extract_string(e.arms, '$[*].name') AS VARCHAR[]), c.arm)
