-- Launches beyond the launch cap of their organization and UTC day, in ledger order.
SELECT org_id, launch_day, launch_slot, launch_cap, admission_id, arm, launched_at
FROM admission_states
WHERE NOT within_launch_cap
ORDER BY org_id, launch_day, launch_slot
