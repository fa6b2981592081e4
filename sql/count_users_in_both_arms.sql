-- Users seen in more than one arm of an experiment (its sessions' user_id), counted on the
-- day the user first appeared in a second arm: how far a session-randomized experiment is
-- from independent units (DESIGN section 2, lesson 9). Only users with sessions in several
-- arms are followed day by day (most users are in one arm).
WITH assigned AS NOT MATERIALIZED (
    SELECT experiment_id, user_id, arm, assigned_at
    FROM experience WHERE assigned_at < $as_of_end AND user_id IS NOT NULL
), mixed AS (
    SELECT experiment_id, user_id FROM assigned GROUP BY ALL HAVING min(arm) <> max(arm)
), first_seen AS (
    SELECT experiment_id, user_id, arm, min(CAST(assigned_at AS DATE)) AS day
    FROM assigned SEMI JOIN mixed USING (experiment_id, user_id)
    GROUP BY ALL
), second AS (
    SELECT experiment_id, user_id,
           list_sort(list(day))[2] AS day
    FROM first_seen GROUP BY ALL HAVING count(*) >= 2
)
SELECT experiment_id, day, CAST(count(*) AS BIGINT) AS users FROM second GROUP BY ALL ORDER BY ALL
