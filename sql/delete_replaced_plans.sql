-- The plans of the families a corrected or removed registration belongs to (temp table
-- replaced_plans, zcl_assets/defs/analysis/assets.py), and the refusals among them: the same
-- night plans their registrations again, in registration order.
DELETE FROM quarantine
WHERE stage = 'registration' AND rule = 'alpha_slots_exhausted'
  AND json_extract_string(record, '$.experiment_id') IN (SELECT experiment_id FROM replaced_plans);
DELETE FROM experiment_plans WHERE experiment_id IN (SELECT experiment_id FROM replaced_plans);
