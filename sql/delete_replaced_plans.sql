-- The plans of the families a corrected or removed registration belongs to (temp table
-- replaced_plans, zcl_assets/defs/analysis/assets.py), and the refusals among them: the same
-- night plans their registrations again, in registration order. A refusal's record is the JSON
-- object of its experiment id, {"experiment_id":"..."}; earlier versions wrote the id unescaped
-- after a space, which is matched as written (it need not parse).
DELETE FROM quarantine
WHERE stage = 'registration' AND rule = 'alpha_slots_exhausted'
  AND (CASE WHEN stage = 'registration' AND rule = 'alpha_slots_exhausted' AND record LIKE '{"experiment_id":"%'
            THEN json_extract_string(record, '$.experiment_id') END
           IN (SELECT experiment_id FROM replaced_plans)
       OR record IN (SELECT '{"experiment_id": "' || experiment_id || '"}' FROM replaced_plans));
DELETE FROM experiment_plans WHERE experiment_id IN (SELECT experiment_id FROM replaced_plans);
