-- Per admitted experiment, with its family, the day it should reach its plan: its
-- latest look plus that look's days left (the slowest primary comparison), else, before any
-- look, its registration day plus its frozen plan's days; NULL when neither is known (no
-- traffic, unreachable, stalled) or when that day falls after 9999-12-31, the last day a date
-- holds (a plan at the registration bounds can take billions of days).
WITH latest AS (
    SELECT experiment_id, max(as_of) AS as_of FROM experiment_analysis WHERE is_primary GROUP BY ALL
), looked AS (
    SELECT a.experiment_id, a.as_of, ceil(max(a.days_to_plan)) AS days
    FROM experiment_analysis a JOIN latest l USING (experiment_id, as_of)
    WHERE a.is_primary GROUP BY a.experiment_id, a.as_of
), counted AS (
    SELECT p.experiment_id, p.org_id, p.task_type,
           CASE WHEN k.days IS NOT NULL THEN k.as_of ELSE CAST(e.registered_at AS DATE) END AS start,
           CASE WHEN k.days IS NOT NULL THEN k.days ELSE ceil(p.days_to_plan) END AS days
    FROM experiment_plans p
    JOIN staged_experiments e USING (experiment_id)
    LEFT JOIN looked k USING (experiment_id)
    WHERE p.admitted
)
-- a day count within the dates is below 3 million: it fits the INTEGER a date adds
SELECT experiment_id, org_id, task_type,
       CASE WHEN days <= date_diff('day', start, DATE '9999-12-31') THEN start + CAST(days AS INTEGER) END
FROM counted
ORDER BY 1
