-- The status stream of every experiment (current status = last event), with declared
-- allocation changes.
SELECT experiment_id, status, "at", reason, allocation FROM staged_experiment_events ORDER BY experiment_id, "at", status
