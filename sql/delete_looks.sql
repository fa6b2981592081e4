-- The looks are derived from the staged data and recomputed whole at every run.
DELETE FROM experiment_analysis
