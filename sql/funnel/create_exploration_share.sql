-- The exploration monitor's rows, computed from count_explored_sessions (registered frame exploration_batch).
CREATE OR REPLACE TABLE exploration_share AS SELECT * FROM exploration_batch
