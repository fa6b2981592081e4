-- Outcomes whose session is not staged (not landed yet, or quarantined). Re-checked every
-- run, so an outcome is staged once its session is. The subject's sessions are looked up
-- first: DuckDB filters that scan of the staged sessions by the subject's ids, where an anti
-- join with the whole table read every staged session.
WITH staged AS (
    SELECT session_id FROM staged_sessions WHERE session_id IN (SELECT session_id FROM subject)
)
SELECT c.partition_day, c.source_file, c.source_row, 'session ' || c.session_id || ' is not staged' AS reason
FROM subject c ANTI JOIN staged USING (session_id)
