-- The experience-stage quarantine rows of the assignments in scope: those of their earlier
-- exclusions (internal.experience_exclusions within the scope pairs).
DELETE FROM quarantine q USING (
    SELECT x.partition_day, x.source_file, x.source_row FROM internal.experience_exclusions x
    SEMI JOIN scope_pairs USING (experiment_id, session_id)
) x
WHERE q.stage = 'experience' AND q.source_table = 'assignments'
  AND q.partition_day = x.partition_day AND q.source_file = x.source_file AND q.source_row = x.source_row
