-- Admissions that reached each stage per organization (terminal split by outcome), from
-- funnel_stage_counts; share_of_admitted is relative to the organization's admissions.
WITH reached AS (
    SELECT org_id, CASE WHEN stage = 'terminal' THEN 'terminal: ' || outcome ELSE stage END AS stage,
           sum(admissions) AS admissions
    FROM funnel_stage_counts GROUP BY ALL
    UNION ALL
    SELECT org_id, 'terminal', sum(admissions) FROM funnel_stage_counts WHERE stage = 'terminal' GROUP BY ALL
), admitted AS (
    SELECT org_id, admissions AS admitted FROM reached WHERE stage = 'admitted'
)
SELECT r.org_id, r.stage, r.admissions::BIGINT AS admissions, r.admissions / a.admitted AS share_of_admitted
FROM reached r JOIN admitted a USING (org_id)
ORDER BY r.org_id, r.stage
