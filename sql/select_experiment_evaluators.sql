-- Who decided the verified outcomes of each experiment: evaluator id, version and kind (the
-- citations of its knowledge records).
SELECT experiment_id,
       to_json(list({'evaluator_id': evaluator_id, 'evaluator_version': evaluator_version,
                     'evaluator_kind': evaluator_kind} ORDER BY evaluator_kind, evaluator_id, evaluator_version)) AS evaluators
FROM (SELECT DISTINCT experiment_id, evaluator_id, evaluator_version, evaluator_kind FROM experience WHERE verified)
GROUP BY experiment_id
