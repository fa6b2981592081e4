-- Per-task Experience Gain rows computed in Python (registered frame gain_by_task_batch).
CREATE OR REPLACE TABLE experience_gain_by_task AS SELECT * FROM gain_by_task_batch
