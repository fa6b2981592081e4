-- Quarantined and excluded rows by experiment, stage, table and rule. A row names its
-- experiment in its record (assignments, registrations, events, snapshots) or through its
-- session's assignment (sessions, outcomes); a row naming neither (e.g. unparseable text)
-- has a NULL experiment_id. The ids are read with a pattern, not a JSON parser, so a record
-- that is not valid JSON (the reason it was quarantined) is still attributed when it can be.
WITH parsed AS (
    SELECT source_table, stage, rule,
           nullif(regexp_extract(record, '"experiment_id"\s*:\s*"([^"]*)"', 1), '') AS named_experiment,
           nullif(regexp_extract(record, '"session_id"\s*:\s*"([^"]*)"', 1), '') AS session_id
    FROM quarantine
), session_experiments AS (
    SELECT session_id, min(experiment_id) AS session_experiment
    FROM staged_assignments
    WHERE session_id IN (SELECT session_id FROM parsed WHERE named_experiment IS NULL)
    GROUP BY session_id
)
SELECT coalesce(p.named_experiment, s.session_experiment) AS experiment_id, p.stage, p.source_table, p.rule,
       count(*) AS rows
FROM parsed p
LEFT JOIN session_experiments s USING (session_id)
GROUP BY ALL
ORDER BY experiment_id, stage, source_table, rule
