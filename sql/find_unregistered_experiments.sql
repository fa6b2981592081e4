-- Rows of `subject` that name an experiment with no staged registration.
SELECT c.partition_day, c.source_file, c.source_row, 'experiment ' || c.experiment_id || ' is not registered' AS reason
FROM subject c ANTI JOIN staged_experiments e USING (experiment_id)
