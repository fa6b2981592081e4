-- UTC days on which an organization admitted more attempts than its attempt cap, with the
-- admissions beyond the cap (in ledger order).
SELECT org_id, attempt_day, count(*) AS attempts, any_value(attempt_cap) AS attempt_cap,
       list(admission_id ORDER BY attempt_slot) FILTER (WHERE NOT within_attempt_cap) AS over_cap
FROM admission_states
GROUP BY org_id, attempt_day
HAVING count(*) > any_value(attempt_cap)
ORDER BY org_id, attempt_day
