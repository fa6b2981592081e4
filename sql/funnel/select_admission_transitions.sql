-- Replay the lifecycle events of every admission in order (at, stage order, file, row) and
-- judge each against the admission's state so far: valid (rule NULL, the state moves on) or
-- broken (the first rule that matches; the state stays). Rules: zcl_assets/funnel/lifecycle.py.
-- Reads the registered frames lifecycle_transitions(from_state, to_state) and
-- lifecycle_stage_order(stage, stage_order); $outcomes lists the valid terminal outcomes.
CREATE OR REPLACE TEMP TABLE admission_transitions AS
WITH RECURSIVE ordered AS (
    SELECT e.admission_id, e.org_id, e.task_type, e.state AS stage, e."at", e.arm, e.session_id, e.outcome,
           e.partition_day, e.source_file, e.source_row,
           row_number() OVER (PARTITION BY e.admission_id
                              ORDER BY e."at", o.stage_order, e.source_file, e.source_row) AS k
    FROM staged_admission_events e JOIN lifecycle_stage_order o ON o.stage = e.state
), replay AS (
    SELECT DISTINCT admission_id, 0 AS k, 'none' AS state, NULL::VARCHAR AS state_before, NULL::VARCHAR AS rule,
           NULL::VARCHAR AS adm_org, NULL::VARCHAR AS adm_task, NULL::VARCHAR AS adm_arm
    FROM ordered
    UNION ALL
    SELECT admission_id, k,
           CASE WHEN rule IS NULL THEN stage ELSE state END,
           state, rule,
           CASE WHEN rule IS NULL AND stage = 'admitted' THEN org_id ELSE adm_org END,
           CASE WHEN rule IS NULL AND stage = 'admitted' THEN task_type ELSE adm_task END,
           CASE WHEN rule IS NULL AND stage = 'admitted' THEN arm ELSE adm_arm END
    FROM (
        SELECT r.admission_id, e.k, r.state, e.stage, e.org_id, e.task_type, e.arm, r.adm_org, r.adm_task, r.adm_arm,
            CASE
                WHEN e.stage = 'terminal' AND NOT coalesce(list_contains($outcomes, e.outcome), false) THEN 'bad_outcome'
                WHEN e.org_id <> r.adm_org OR e.task_type <> r.adm_task OR e.arm <> r.adm_arm THEN 'inconsistent_admission'
                WHEN t.to_state IS NOT NULL THEN NULL
                WHEN r.state = 'none' THEN 'not_admitted_first'
                WHEN r.state = 'terminal' THEN 'event_after_terminal'
                WHEN r.state = 'blocked' THEN 'event_after_blocked'
                WHEN e.stage = 'launched' AND r.state = 'launched' THEN 'launched_twice'
                WHEN e.stage = 'terminal' THEN 'terminal_before_launched'
                WHEN e.stage = r.state THEN 'repeated_stage'
                ELSE 'out_of_order'
            END AS rule
        FROM replay r
        JOIN ordered e ON e.admission_id = r.admission_id AND e.k = r.k + 1
        LEFT JOIN lifecycle_transitions t ON t.from_state = r.state AND t.to_state = e.stage
    )
)
SELECT o.*, r.state_before, r.rule, r.rule IS NULL AS valid,
    CASE r.rule
        WHEN 'bad_outcome' THEN format('terminal outcome {} is not one of {}', coalesce(o.outcome, 'missing'), array_to_string($outcomes, ', '))
        WHEN 'inconsistent_admission' THEN format('({}, {}, {}) differs from the admitted event ({}, {}, {})',
            o.org_id, o.task_type, coalesce(o.arm, '-'), r.adm_org, r.adm_task, coalesce(r.adm_arm, '-'))
        WHEN 'not_admitted_first' THEN format('{} before the admission was admitted', o.stage)
        WHEN 'event_after_terminal' THEN format('{} after the admission ended (terminal)', o.stage)
        WHEN 'event_after_blocked' THEN format('{} after the admission ended (blocked)', o.stage)
        WHEN 'launched_twice' THEN 'launched twice: the admission was already launched'
        WHEN 'terminal_before_launched' THEN format('terminal before launched (the admission was {})', r.state_before)
        WHEN 'repeated_stage' THEN format('{} twice', o.stage)
        WHEN 'out_of_order' THEN format('{} cannot follow {}', o.stage, r.state_before)
    END AS reason
FROM ordered o JOIN replay r ON r.admission_id = o.admission_id AND r.k = o.k
