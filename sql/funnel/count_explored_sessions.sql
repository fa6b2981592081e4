-- Sessions per organization and task type, and those that explored: took part in an
-- experiment or were launched by an exploration admission.
SELECT org_id, task_type, count(*) AS sessions,
       count(*) FILTER (WHERE experiment_id IS NOT NULL OR admission_id IS NOT NULL) AS explored,
       count(*) FILTER (WHERE experiment_id IS NOT NULL) AS in_experiments,
       count(*) FILTER (WHERE admission_id IS NOT NULL) AS from_admissions
FROM staged_sessions
GROUP BY ALL
ORDER BY ALL
