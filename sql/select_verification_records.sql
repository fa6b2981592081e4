-- One row per staged outcome in scope (temp view scope_outcomes: every staged outcome, or
-- those of the sessions a night's changes touch): who decided it and whether its task type's
-- evaluation contract counts that kind as authoritative. Outcomes of sessions not staged keep
-- a null task type and are judged by the default contract. Temp relation scope_session_tasks:
-- session_id, org_id and task_type of the staged sessions of those outcomes (or of all).
SELECT o.session_id, s.org_id, s.task_type, o.evaluator_id, o.evaluator_version, o.evaluator_kind,
       o.recorded_at, o.success, o.time_minutes, o.tokens, o.score,
       coalesce(specific.source, fallback.source) AS contract,
       list_contains(coalesce(specific.authoritative_kinds, fallback.authoritative_kinds), o.evaluator_kind)
           AS authoritative,
       o.partition_day, o.source_file, o.source_row
FROM scope_outcomes o
LEFT JOIN scope_session_tasks s USING (session_id)
LEFT JOIN evaluation_contracts specific ON specific.task_type = s.task_type
CROSS JOIN (SELECT * FROM evaluation_contracts WHERE task_type = '*') fallback
