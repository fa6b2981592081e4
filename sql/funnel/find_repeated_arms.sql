-- Arm diversity: admissions whose arm was already attempted earlier the same UTC day while
-- another eligible arm had not been attempted yet that day. Eligible arms: the registered
-- frame eligible_arms(org_id, arm) for configured organizations, otherwise the arms the
-- organization attempted up to and including that day.
WITH attempts AS (
    SELECT admission_id, org_id, attempt_day AS day, arm, attempt_slot FROM admission_states WHERE arm IS NOT NULL
), days AS (
    SELECT DISTINCT org_id, day FROM attempts
), first_seen AS (
    SELECT org_id, arm, min(day) AS first_day FROM attempts GROUP BY ALL
), eligible AS (
    SELECT d.org_id, d.day, c.arm FROM days d JOIN eligible_arms c USING (org_id)
    UNION
    SELECT d.org_id, d.day, f.arm FROM days d JOIN first_seen f ON f.org_id = d.org_id AND f.first_day <= d.day
    WHERE d.org_id NOT IN (SELECT org_id FROM eligible_arms)
), repeats AS (
    SELECT a.* FROM attempts a
    WHERE EXISTS (SELECT 1 FROM attempts b
                  WHERE b.org_id = a.org_id AND b.day = a.day AND b.arm = a.arm AND b.attempt_slot < a.attempt_slot)
)
SELECT r.org_id, r.day, r.attempt_slot, r.admission_id, r.arm, list(e.arm ORDER BY e.arm) AS untried_arms
FROM repeats r JOIN eligible e ON e.org_id = r.org_id AND e.day = r.day
WHERE NOT EXISTS (SELECT 1 FROM attempts b
                  WHERE b.org_id = r.org_id AND b.day = r.day AND b.arm = e.arm AND b.attempt_slot < r.attempt_slot)
GROUP BY ALL
ORDER BY r.org_id, r.day, r.attempt_slot
