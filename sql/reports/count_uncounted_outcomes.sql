-- Per experiment as of one look ($as_of_end): assigned sessions that have outcomes but none of a
-- kind the evaluation contract counts (kept, never used for decisions), by evaluator kind.
SELECT x.experiment_id, v.evaluator_kind, count(DISTINCT x.session_id) AS sessions
FROM experience x
JOIN verification_records v USING (session_id)
WHERE NOT x.verified AND x.outcomes > 0 AND x.assigned_at < $as_of_end
GROUP BY ALL
ORDER BY ALL
