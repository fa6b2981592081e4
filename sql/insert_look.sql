INSERT INTO experiment_analysis BY NAME
SELECT CAST($as_of AS DATE) AS as_of, *, current_timestamp AS analysed_at FROM look_batch
