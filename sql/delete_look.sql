DELETE FROM experiment_analysis WHERE as_of = CAST($as_of AS DATE)
