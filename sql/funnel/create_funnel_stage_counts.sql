-- Admissions that entered each stage, per UTC day of the transition, organization, task
-- type and arm; terminal transitions split by outcome. Only valid transitions count, and
-- each admission enters a stage at most once, so an admission is never counted twice.
CREATE OR REPLACE TABLE funnel_stage_counts AS
SELECT CAST(t."at" AS DATE) AS day, s.org_id, s.task_type, s.arm, t.stage,
       CASE WHEN t.stage = 'terminal' THEN t.outcome END AS outcome,
       count(*) AS admissions
FROM admission_transitions t JOIN admission_states s USING (admission_id)
WHERE t.valid
GROUP BY ALL
ORDER BY ALL
