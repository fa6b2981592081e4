-- The looks are derived from the staged data and recomputed whole at every run, up to the
-- night asked for ($as_of); looks of later nights (a run for an earlier night) are kept as
-- they were, so knowledge records never cite a look that is gone.
DELETE FROM experiment_analysis WHERE as_of <= CAST($as_of AS DATE)
