-- The staged assignments that break a row-level exclusion rule, first rule first:
-- no_session (no staged session of that id), delivered_arm_mismatch (the session belongs to
-- another experiment or delivered another arm). The whole-unit rules are added by
-- insert_experience_unit_exclusions.sql; create_experience.sql keeps every other assignment.
-- Rows are identified by their lineage (day, file, row), so this table stays as small as the
-- exclusions however many sessions a night holds.
CREATE OR REPLACE TEMP TABLE experience_exclusions AS
SELECT * FROM (
    SELECT a.partition_day, a.source_file, a.source_row, a.experiment_id, a.session_id, a.unit_id, a.arm,
           s.delivered_arm, s.experiment_id AS session_experiment_id,
           CASE WHEN s.session_id IS NULL THEN 'no_session'
                WHEN s.experiment_id IS DISTINCT FROM a.experiment_id OR s.delivered_arm IS DISTINCT FROM a.arm
                    THEN 'delivered_arm_mismatch' END AS exclusion
    FROM scope_assignments a
    SEMI JOIN staged_experiments e USING (experiment_id)
    LEFT JOIN staged_sessions s USING (session_id)
) WHERE exclusion IS NOT NULL
