ALTER TABLE staged_experiment_events ADD COLUMN IF NOT EXISTS allocation JSON;
