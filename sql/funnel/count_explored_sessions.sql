-- Sessions per organization and task type, and those that explored: took part in an
-- experiment or were launched by an exploration admission (sums of the stored daily counts,
-- internal.explored_session_days).
SELECT org_id, task_type, CAST(sum(sessions) AS BIGINT) AS sessions, CAST(sum(explored) AS BIGINT) AS explored,
       CAST(sum(in_experiments) AS BIGINT) AS in_experiments, CAST(sum(from_admissions) AS BIGINT) AS from_admissions
FROM internal.explored_session_days
GROUP BY ALL
ORDER BY ALL
