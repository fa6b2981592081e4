-- Staged lifecycle events against events replayed into admission_states plus funnel quarantine.
SELECT (SELECT count(*) FROM staged_admission_events) AS staged,
       (SELECT coalesce(sum(valid_events), 0) FROM admission_states) AS valid,
       (SELECT count(*) FROM quarantine WHERE stage = 'funnel') AS quarantined
