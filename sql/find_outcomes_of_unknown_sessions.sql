-- Outcomes whose session is not staged (not landed yet, or quarantined). Re-checked every
-- run, so an outcome is staged once its session is.
SELECT c.partition_day, c.source_file, c.source_row, 'session ' || c.session_id || ' is not staged' AS reason
FROM subject c ANTI JOIN staged_sessions s USING (session_id)
