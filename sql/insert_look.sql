INSERT INTO experiment_analysis BY NAME SELECT *, now() AS analysed_at FROM look_batch
