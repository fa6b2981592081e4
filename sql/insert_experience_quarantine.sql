-- Every excluded assignment, with the lineage of its staged row (day, file, row) and the
-- rule and reason of its exclusion.
INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at)
SELECT 'assignments', x.partition_day, x.source_file, x.source_row, 'experience', x.exclusion,
    CASE x.exclusion
        WHEN 'no_session' THEN 'no staged session ' || x.session_id || ' for this assignment'
        WHEN 'delivered_arm_mismatch' THEN 'assigned ' || x.arm || ' but the session delivered '
            || coalesce(x.delivered_arm, 'nothing') || coalesce(' of experiment ' || x.session_experiment_id, '')
        WHEN 'unit_multiple_arms' THEN 'unit ' || x.unit_id || ' was assigned to more than one arm; every row of the unit is excluded'
        WHEN 'unit_contaminated' THEN 'unit ' || x.unit_id || ' has another row whose delivered arm disagrees with its assignment; every row of the unit is excluded'
        WHEN 'repeated_unit' THEN 'unit ' || x.unit_id || ' appears again in a unit-level experiment; only its first row is kept'
    END,
    to_json({session_id: x.session_id, experiment_id: x.experiment_id, arm: x.arm, unit_id: x.unit_id, delivered_arm: x.delivered_arm}),
    current_timestamp
FROM experience_exclusions x
