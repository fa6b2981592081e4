-- Who decided the verified outcomes a look rests on (the citations of its knowledge record):
-- for every look of registered frame cited_looks(experiment_id, as_of, look_end), the evaluator
-- id, version and kind of each session's latest authoritative outcome recorded before the end
-- of the look's day (ties: evaluator id, then version, as the experience table chooses), for the
-- experiment's sessions assigned before it: the outcomes that look counts
-- (aggregate_arm_day_sums.sql), not those recorded on later nights.
WITH outcomes AS (
    SELECT l.experiment_id, l.as_of, v.evaluator_id, v.evaluator_version, v.evaluator_kind,
           row_number() OVER (PARTITION BY l.experiment_id, l.as_of, v.session_id
                              ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
    FROM cited_looks l
    JOIN experience x ON x.experiment_id = l.experiment_id AND x.assigned_at < l.look_end
    JOIN verification_records v ON v.session_id = x.session_id AND v.authoritative AND v.recorded_at < l.look_end
)
SELECT experiment_id, as_of,
       to_json(list({'evaluator_id': evaluator_id, 'evaluator_version': evaluator_version,
                     'evaluator_kind': evaluator_kind} ORDER BY evaluator_kind, evaluator_id, evaluator_version)) AS evaluators
FROM (SELECT DISTINCT experiment_id, as_of, evaluator_id, evaluator_version, evaluator_kind FROM outcomes WHERE k = 1)
GROUP BY ALL
