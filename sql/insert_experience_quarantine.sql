INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at)
SELECT 'assignments', partition_day, source_file, source_row, 'experience', exclusion,
    CASE exclusion
        WHEN 'no_session' THEN 'no staged session ' || session_id || ' for this assignment'
        WHEN 'delivered_arm_mismatch' THEN 'assigned ' || arm || ' but the session delivered '
            || coalesce(delivered_arm, 'nothing') || coalesce(' of experiment ' || session_experiment_id, '')
        WHEN 'unit_multiple_arms' THEN 'unit ' || unit_id || ' was assigned to more than one arm; every row of the unit is excluded'
        WHEN 'unit_contaminated' THEN 'unit ' || unit_id || ' has another row whose delivered arm disagrees with its assignment; every row of the unit is excluded'
        WHEN 'repeated_unit' THEN 'unit ' || unit_id || ' appears again in a unit-level experiment; only its first row is kept'
    END,
    to_json({session_id: session_id, experiment_id: experiment_id, arm: arm, unit_id: unit_id, delivered_arm: delivered_arm}),
    current_timestamp
FROM experience_candidates WHERE exclusion IS NOT NULL
