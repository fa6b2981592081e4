SELECT experiment_id, "at", partition_day, source_file, source_row FROM staged_experiment_events
WHERE allocation IS NOT NULL
