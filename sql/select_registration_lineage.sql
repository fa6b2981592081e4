SELECT experiment_id, partition_day, source_file, source_row FROM staged_experiments
