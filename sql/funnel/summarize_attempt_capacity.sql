-- Per organization: admissions over the days they span against what the attempt cap allows
-- in those days (days x cap), and the fewest days that could hold them at that cap.
SELECT org_id, count(*) AS admissions, min(attempt_day) AS first_day, max(attempt_day) AS last_day,
       max(attempt_day) - min(attempt_day) + 1 AS days, max(attempt_cap) AS attempt_cap,
       (max(attempt_day) - min(attempt_day) + 1) * max(attempt_cap) AS capacity,
       CASE WHEN max(attempt_cap) > 0 THEN ceil(count(*) / max(attempt_cap))::BIGINT END AS days_needed
FROM admission_states
GROUP BY org_id
ORDER BY org_id
