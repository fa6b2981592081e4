-- Information yield: useful (productive) observations per admission and per launch, per
-- organization (task_type and arm '(all)') and per organization, task type and arm.
CREATE OR REPLACE TABLE information_yield AS
SELECT org_id,
       CASE WHEN grouping(task_type) = 1 THEN '(all)' ELSE task_type END AS task_type,
       CASE WHEN grouping(arm) = 1 THEN '(all)' ELSE arm END AS arm,
       min(attempt_day) AS first_day, max(attempt_day) AS last_day,
       count(*) AS admissions,
       count(consumed_at) AS consumed,
       count(launched_at) AS launched,
       count(blocked_at) AS blocked,
       count(terminal_at) AS terminal,
       count(*) FILTER (WHERE outcome = 'productive') AS productive,
       count(*) FILTER (WHERE outcome = 'productive') / count(*) AS yield_per_admission,
       count(*) FILTER (WHERE outcome = 'productive') / nullif(count(launched_at), 0) AS yield_per_launch,
       count(launched_at) / count(*) AS launch_share
FROM admission_states
GROUP BY GROUPING SETS ((org_id), (org_id, task_type, arm))
ORDER BY org_id, grouping(task_type, arm) DESC, task_type, arm
