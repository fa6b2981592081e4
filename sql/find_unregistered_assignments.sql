SELECT c.row_index, 'experiment ' || c.experiment_id || ' is not registered' AS reason
FROM candidate c ANTI JOIN staged_experiments e USING (experiment_id)
