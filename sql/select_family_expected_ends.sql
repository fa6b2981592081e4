-- Per admitted experiment, with its family, the day it should reach its plan: its
-- latest look plus that look's days left (the slowest primary comparison), else, before any
-- look, its registration day plus its frozen plan's days; NULL when neither is known (no
-- traffic, unreachable, stalled).
WITH latest AS (
    SELECT experiment_id, max(as_of) AS as_of FROM experiment_analysis WHERE is_primary GROUP BY ALL
), looked AS (
    SELECT a.experiment_id, CAST(a.as_of + INTERVAL (CAST(ceil(max(a.days_to_plan)) AS INTEGER)) DAY AS DATE) AS expected
    FROM experiment_analysis a JOIN latest l USING (experiment_id, as_of)
    WHERE a.is_primary GROUP BY a.experiment_id, a.as_of
)
SELECT p.experiment_id, p.org_id, p.task_type,
       coalesce(k.expected, CAST(CAST(e.registered_at AS DATE) + INTERVAL (CAST(ceil(p.days_to_plan) AS INTEGER)) DAY AS DATE))
FROM experiment_plans p
JOIN staged_experiments e USING (experiment_id)
LEFT JOIN looked k USING (experiment_id)
WHERE p.admitted
ORDER BY 1
