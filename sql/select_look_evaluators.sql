-- Who decided the verified outcomes a look rests on (the citations of its knowledge record):
-- for every look of registered frame cited_looks(experiment_id, as_of), the evaluator id,
-- version and kind of each session's latest authoritative outcome recorded before the end of
-- the look's day (ties: evaluator id, then version, as the experience table chooses), for the
-- experiment's sessions assigned before it: the outcomes that look counts
-- (aggregate_arm_day_sums.sql), not those recorded on later nights.
--
-- An outcome is the current one of its session at the looks from the day it enters (the later
-- of assignment and recording) to the day before the next outcome of the session is recorded;
-- a session with one authoritative outcome keeps it from then on. So each evaluator is cited
-- from the first day one of its outcomes enters, and an outcome replaced later only up to the
-- day before: a few day ranges per evaluator, whatever the number of sessions. The sessions with
-- one authoritative outcome are read from the experience's daily counts (internal.experience_days),
-- the few with several from the experience and their verification records.
WITH experiments AS (
    SELECT DISTINCT experiment_id FROM cited_looks
), ranges AS (
    SELECT experiment_id, evaluator_id, evaluator_version, evaluator_kind,
           greatest(day, verified_day) AS from_day, CAST(NULL AS DATE) AS to_day
    FROM internal.experience_days SEMI JOIN experiments USING (experiment_id)
    WHERE single_outcome
    UNION ALL
    SELECT experiment_id, evaluator_id, evaluator_version, evaluator_kind,
           CAST(greatest(assigned_at, recorded_at) AS DATE) AS from_day, CAST(replaced_at AS DATE) - 1 AS to_day
    FROM (
        SELECT x.experiment_id, x.assigned_at, v.recorded_at, v.evaluator_id, v.evaluator_version, v.evaluator_kind,
               lead(v.recorded_at) OVER (PARTITION BY x.experiment_id, x.session_id
                                         ORDER BY v.recorded_at, v.evaluator_id DESC, v.evaluator_version DESC) AS replaced_at
        FROM experience x SEMI JOIN experiments USING (experiment_id)
        JOIN verification_records v ON v.session_id = x.session_id AND v.authoritative
        WHERE x.authoritative_outcomes > 1
    )
), spans AS (
    SELECT experiment_id, evaluator_id, evaluator_version, evaluator_kind, to_day, min(from_day) AS from_day
    FROM ranges GROUP BY ALL
), cited AS (
    SELECT DISTINCT l.experiment_id, l.as_of, s.evaluator_id, s.evaluator_version, s.evaluator_kind
    FROM cited_looks l JOIN spans s ON s.experiment_id = l.experiment_id
     AND s.from_day <= l.as_of AND (s.to_day IS NULL OR l.as_of <= s.to_day)
)
SELECT experiment_id, as_of,
       to_json(list({'evaluator_id': evaluator_id, 'evaluator_version': evaluator_version,
                     'evaluator_kind': evaluator_kind} ORDER BY evaluator_kind, evaluator_id, evaluator_version)) AS evaluators
FROM cited
GROUP BY ALL
