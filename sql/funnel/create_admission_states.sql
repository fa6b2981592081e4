-- One row per admission: its current state (the stage of its last valid event), when it
-- reached each stage, and the budget slots it took. An attempt is charged at `admitted`,
-- a launch at `launched`: the n-th admission (launch) of an organization on a UTC day takes
-- slot n, in the order of the ledger (time, then file and row), and is within its cap when
-- n <= cap. Caps and stall times come from the registered frame budget_caps (configured
-- organizations) or the defaults $launch_cap, $attempt_cap, $stall_after_hours. An admission
-- still admitted or consumed more than its stall time before the ledger's last event is stalled.
CREATE OR REPLACE TABLE admission_states AS
WITH valid AS (
    SELECT * FROM admission_transitions WHERE valid
), per_admission AS (
    SELECT admission_id,
           arg_max(stage, k) AS state,
           any_value(org_id) FILTER (WHERE stage = 'admitted') AS org_id,
           any_value(task_type) FILTER (WHERE stage = 'admitted') AS task_type,
           any_value(arm) FILTER (WHERE stage = 'admitted') AS arm,
           any_value(outcome) FILTER (WHERE stage = 'terminal') AS outcome,
           coalesce(any_value(session_id) FILTER (WHERE stage = 'launched'),
                    any_value(session_id) FILTER (WHERE stage = 'terminal')) AS session_id,
           any_value("at") FILTER (WHERE stage = 'admitted') AS admitted_at,
           any_value("at") FILTER (WHERE stage = 'consumed') AS consumed_at,
           any_value("at") FILTER (WHERE stage = 'launched') AS launched_at,
           any_value("at") FILTER (WHERE stage = 'blocked') AS blocked_at,
           any_value("at") FILTER (WHERE stage = 'terminal') AS terminal_at,
           max("at") AS state_at,
           any_value(source_file) FILTER (WHERE stage = 'admitted') AS admitted_file,
           any_value(source_row) FILTER (WHERE stage = 'admitted') AS admitted_row,
           any_value(source_file) FILTER (WHERE stage = 'launched') AS launched_file,
           any_value(source_row) FILTER (WHERE stage = 'launched') AS launched_row,
           count(*) AS valid_events
    FROM valid GROUP BY admission_id
), broken AS (
    SELECT admission_id, count(*) AS quarantined_events FROM admission_transitions WHERE NOT valid GROUP BY ALL
), ledger AS (
    SELECT max("at") AS as_of FROM staged_admission_events
), slotted AS (
    SELECT p.*,
           CAST(p.admitted_at AS DATE) AS attempt_day,
           row_number() OVER (PARTITION BY p.org_id, CAST(p.admitted_at AS DATE)
                              ORDER BY p.admitted_at, p.admitted_file, p.admitted_row, p.admission_id) AS attempt_slot,
           CAST(p.launched_at AS DATE) AS launch_day,
           CASE WHEN p.launched_at IS NOT NULL THEN
               row_number() OVER (PARTITION BY p.org_id, CAST(p.launched_at AS DATE), p.launched_at IS NULL
                                  ORDER BY p.launched_at, p.launched_file, p.launched_row, p.admission_id) END AS launch_slot
    FROM per_admission p
)
SELECT s.admission_id, s.org_id, s.task_type, s.arm, s.state, s.outcome, s.session_id,
       s.admitted_at, s.consumed_at, s.launched_at, s.blocked_at, s.terminal_at, s.state_at,
       s.attempt_day, s.attempt_slot, coalesce(c.attempt_cap, $attempt_cap) AS attempt_cap,
       s.attempt_slot <= coalesce(c.attempt_cap, $attempt_cap) AS within_attempt_cap,
       s.launch_day, s.launch_slot, coalesce(c.launch_cap, $launch_cap) AS launch_cap,
       s.launch_slot <= coalesce(c.launch_cap, $launch_cap) AS within_launch_cap,
       s.state IN ('admitted', 'consumed')
           AND epoch(l.as_of) - epoch(s.state_at) > 3600 * coalesce(c.stall_after_hours, $stall_after_hours) AS stalled,
       (epoch(l.as_of) - epoch(s.state_at)) / 3600 AS hours_in_state,
       s.valid_events, coalesce(b.quarantined_events, 0) AS quarantined_events
FROM slotted s
CROSS JOIN ledger l
LEFT JOIN budget_caps c USING (org_id)
LEFT JOIN broken b USING (admission_id)
ORDER BY s.org_id, s.admitted_at, s.admission_id
