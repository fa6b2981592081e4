SELECT c.row_index,
       CASE WHEN e.experiment_id IS NULL THEN 'experiment ' || c.experiment_id || ' is not registered'
            ELSE 'arm ' || c.arm || ' is not declared by experiment ' || c.experiment_id END AS reason
FROM candidate c LEFT JOIN staged_experiments e USING (experiment_id)
WHERE e.experiment_id IS NULL
   OR NOT list_contains(CAST(json_extract_string(e.arms, '$[*].name') AS VARCHAR[]), c.arm)
