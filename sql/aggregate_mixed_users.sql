-- Users seen in more than one arm of an experiment (its sessions' user_id), with the UTC day
-- the user first appeared in a second arm, where that day is on or after the dirty
-- experiment's from_day (registered frame dirty(experiment_id, from_day)): how far a
-- session-randomized experiment is from independent units (DESIGN section 2, lesson 9).
-- Only users with a session on or after from_day can be new here; each is followed over all
-- its sessions. $from_at: the earliest from_day.
WITH recent AS (
    SELECT DISTINCT x.experiment_id, x.user_id FROM experience x JOIN dirty d USING (experiment_id)
    WHERE x.user_id IS NOT NULL AND x.assigned_at >= $from_at AND CAST(x.assigned_at AS DATE) >= d.from_day
), first_seen AS (
    SELECT experiment_id, user_id, arm, min(CAST(assigned_at AS DATE)) AS day
    FROM experience SEMI JOIN recent USING (experiment_id, user_id)
    GROUP BY ALL
), second AS (
    SELECT experiment_id, user_id, list_sort(list(day))[2] AS day
    FROM first_seen GROUP BY ALL HAVING count(*) >= 2
)
SELECT s.experiment_id, s.user_id, s.day FROM second s JOIN dirty d ON d.experiment_id = s.experiment_id AND s.day >= d.from_day
