INSERT INTO experiment_analysis BY NAME
SELECT CAST($as_of AS DATE) AS as_of, *, now() AS analysed_at FROM look_batch
