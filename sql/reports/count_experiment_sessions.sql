-- Per experiment and arm as of one look ($as_of_end): units and sessions assigned, sessions
-- with an authoritative (verified) outcome recorded before the look, and the first assignment.
SELECT x.experiment_id, x.arm,
       count(DISTINCT CASE WHEN x.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END) AS units,
       count(*) AS sessions,
       count(*) FILTER (WHERE x.verified AND x.recorded_at < $as_of_end) AS verified_sessions,
       min(x.assigned_at) AS first_assigned_at
FROM experience x
WHERE x.assigned_at < $as_of_end
GROUP BY ALL
ORDER BY ALL
