-- When the day's rows were last staged: a day counts as loaded only once it is staged, so
-- a run killed between loading and staging is redone by the next one.
ALTER TABLE landing_manifest ADD COLUMN IF NOT EXISTS staged_at TIMESTAMPTZ
