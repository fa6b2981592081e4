-- Per experiment and arm as of one look ($as_of_end, a UTC midnight): units assigned (the look's
-- daily counts of units first assigned, look_assigned_days), sessions assigned and those of them
-- with an authoritative (verified) outcome recorded before the look (the experience's daily
-- counts, internal.experience_days), and the experiment's first assignment
-- (look_first_assignments, epoch 0). Stored days are summed; no row of the experience is read.
WITH sessions AS (
    SELECT experiment_id, arm, sum(sessions) AS sessions,
           coalesce(sum(sessions) FILTER (WHERE verified_day < CAST($as_of_end AS DATE)), 0) AS verified_sessions
    FROM internal.experience_days
    WHERE day < CAST($as_of_end AS DATE)
    GROUP BY ALL
), units AS (
    SELECT experiment_id, arm, sum(new_units) AS units
    FROM look_assigned_days
    WHERE day < CAST($as_of_end AS DATE)
    GROUP BY ALL
)
SELECT s.experiment_id, s.arm, CAST(coalesce(u.units, 0) AS BIGINT) AS units, CAST(s.sessions AS BIGINT) AS sessions,
       CAST(s.verified_sessions AS BIGINT) AS verified_sessions, f.first_assigned_at
FROM sessions s
LEFT JOIN units u USING (experiment_id, arm)
LEFT JOIN look_first_assignments f ON f.experiment_id = s.experiment_id AND f.epoch = 0
ORDER BY ALL
