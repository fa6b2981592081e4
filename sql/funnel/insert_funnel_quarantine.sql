-- Broken lifecycle events (admission_transitions) into quarantine, stage 'funnel'.
INSERT INTO quarantine
SELECT 'admission_events', partition_day, source_file, source_row, 'funnel', rule, reason,
       to_json({admission_id: admission_id, org_id: org_id, task_type: task_type, state: stage, "at": "at",
                arm: arm, session_id: session_id, outcome: outcome})::VARCHAR,
       current_timestamp
FROM admission_transitions WHERE NOT valid
