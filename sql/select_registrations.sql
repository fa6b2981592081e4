SELECT experiment_id, org_id, task_type, kind, hypothesis, arms, control_arm, primary_metric,
       direction, mde, alpha, power, baseline_mean, baseline_sd, min_samples_per_arm,
       randomization_unit, sessions_per_unit, guardrails, metric_caps, expected_verified_share, cuped,
       registered_at
FROM staged_experiments ORDER BY registered_at, experiment_id
