-- The (experiment, session) pairs whose experience rows a night rebuilds: every assignment,
-- experience row and exclusion of a changed session, every pair of an experiment whose
-- registration changed, and in experiments with whole-unit rules (user-randomized, or one
-- session per unit) every pair of a unit with such a pair. Temp table changed: session_id or
-- experiment_id of the changes read (the change log).
WITH sessions AS (
    SELECT DISTINCT session_id FROM changed WHERE session_id IS NOT NULL
), experiments AS (
    SELECT DISTINCT experiment_id FROM changed WHERE session_id IS NULL AND experiment_id IS NOT NULL
), direct AS (
    SELECT experiment_id, session_id, unit_id FROM staged_assignments WHERE session_id IN (SELECT session_id FROM sessions)
    UNION ALL SELECT experiment_id, session_id, unit_id FROM experience WHERE session_id IN (SELECT session_id FROM sessions)
    UNION ALL SELECT experiment_id, session_id, unit_id FROM internal.experience_exclusions
        WHERE session_id IN (SELECT session_id FROM sessions)
), units AS (
    SELECT DISTINCT d.experiment_id, d.unit_id FROM direct d JOIN staged_experiments e USING (experiment_id)
    WHERE e.randomization_unit = 'user' OR e.sessions_per_unit = 'one'
)
SELECT DISTINCT experiment_id, session_id FROM (
    SELECT experiment_id, session_id FROM direct
    UNION ALL SELECT experiment_id, session_id FROM staged_assignments SEMI JOIN units USING (experiment_id, unit_id)
    UNION ALL SELECT experiment_id, session_id FROM staged_assignments WHERE experiment_id IN (SELECT experiment_id FROM experiments)
    UNION ALL SELECT experiment_id, session_id FROM experience WHERE experiment_id IN (SELECT experiment_id FROM experiments)
    UNION ALL SELECT experiment_id, session_id FROM internal.experience_exclusions
        WHERE experiment_id IN (SELECT experiment_id FROM experiments)
)
