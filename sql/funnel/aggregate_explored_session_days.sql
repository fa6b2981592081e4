-- Sessions per organization, task type and landing day, and those that explored (took part in
-- an experiment or were launched by an exploration admission), for the days of the registered
-- frame explored_days(day): the daily counts count_explored_sessions.sql sums.
SELECT org_id, task_type, partition_day AS day, count(*) AS sessions,
       count(*) FILTER (WHERE experiment_id IS NOT NULL OR admission_id IS NOT NULL) AS explored,
       count(*) FILTER (WHERE experiment_id IS NOT NULL) AS in_experiments,
       count(*) FILTER (WHERE admission_id IS NOT NULL) AS from_admissions
FROM staged_sessions
WHERE partition_day IN (SELECT day FROM explored_days)
GROUP BY ALL
