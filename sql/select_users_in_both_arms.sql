-- Users seen in a second arm of an experiment, counted on the day they first were, as of one
-- look ($as_of_end), from the stored users (look_mixed_users).
SELECT experiment_id, day, CAST(count(*) AS BIGINT) AS users FROM look_mixed_users
WHERE day < CAST($as_of_end AS DATE)
GROUP BY ALL ORDER BY ALL
