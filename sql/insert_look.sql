INSERT INTO experiment_analysis BY NAME SELECT *, current_timestamp AS analysed_at FROM look_batch
