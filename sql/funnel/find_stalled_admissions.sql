-- Admissions still admitted or consumed longer than their stall time before the ledger's last event.
SELECT org_id, admission_id, arm, state, state_at, round(hours_in_state, 2) AS hours_in_state
FROM admission_states
WHERE stalled
ORDER BY org_id, state_at, admission_id
