-- The stored looks up to the night asked for ($as_of) that this pass writes again (temp table
-- written_nights: tonight, and the nights on and after the day each experiment's data changed
-- from) or that no longer exist (temp table current_nights: every night of the pass; a night
-- without data is looked at only while it is the latest). Looks of later nights (a run for an
-- earlier night) are kept as they were, so knowledge records never cite a look that is gone.
DELETE FROM experiment_analysis a
WHERE a.as_of <= CAST($as_of AS DATE)
  AND (EXISTS (SELECT 1 FROM written_nights w WHERE w.experiment_id = a.experiment_id AND w.as_of = a.as_of)
       OR NOT EXISTS (SELECT 1 FROM current_nights c WHERE c.experiment_id = a.experiment_id AND c.as_of = a.as_of))
