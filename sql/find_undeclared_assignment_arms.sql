SELECT c.row_index, 'arm ' || c.arm || ' is not declared by experiment ' || c.experiment_id AS reason
FROM candidate c JOIN staged_experiments e USING (experiment_id)
WHERE NOT list_contains(CAST(json_extract_string(e.arms, '$[*].name') AS VARCHAR[]), c.arm)
