-- Pooled Experience Gain per organization and metric with its claim level (registered frame gain_batch).
CREATE OR REPLACE TABLE experience_gain AS SELECT * FROM gain_batch
