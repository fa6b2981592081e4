-- The CUPED covariate of every user of an experiment (Deng, Xu, Kohavi, Walker 2013): per
-- experiment, analysed metric and user, the user's mean verified value of the metric over its
-- sessions of the experiment's organization and task type that started in the registered
-- window before the experiment's first assignment (registered frame
-- covariate_targets(experiment_id, window_days): the experiments whose plan applies CUPED and
-- whose covariates are rebuilt tonight; first assignment: look_first_assignments, epoch 0).
-- Only what was known at the first assignment counts: a session's latest authoritative outcome
-- recorded before it (ties: the first evaluator id, then version, as in the experience), so no
-- later landing, re-evaluation or correction moves a covariate, and nothing the experiment
-- caused can enter it. A user without such a session has no row (the look gives it x = 0 and
-- the indicator h = 0).
-- Exactness: values are rounded once to the metric's resolution (frame analysed_metrics) and the
-- mean to resolution / 1e6, as the unit means of aggregate_arm_day_sums.sql; time and tokens are
-- capped at the registered metric_caps (sql/fragments/value_of_metric.sql, the rule of both).
WITH target AS (
    SELECT w.experiment_id, e.org_id, e.task_type, f.first_assigned_at,
           f.first_assigned_at - w.window_days * INTERVAL 1 DAY AS window_start,
           TRY_CAST(json_extract_string(e.metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(e.metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM covariate_targets w
    JOIN staged_experiments e USING (experiment_id)
    JOIN look_first_assignments f ON f.experiment_id = w.experiment_id AND f.epoch = 0
), history AS (
    SELECT t.experiment_id, t.first_assigned_at, t.cap_time, t.cap_tokens, s.session_id, s.user_id
    FROM target t JOIN staged_sessions s
      ON s.org_id = t.org_id AND s.task_type = t.task_type
     AND s.started_at < t.first_assigned_at AND s.started_at >= t.window_start
    WHERE s.user_id IS NOT NULL
), known AS (
    SELECT h.experiment_id, h.user_id, h.cap_time, h.cap_tokens, v.success, v.time_minutes, v.tokens, v.score,
           row_number() OVER (PARTITION BY h.experiment_id, h.session_id
                              ORDER BY v.recorded_at DESC, v.evaluator_id, v.evaluator_version) AS k
    FROM history h JOIN verification_records v
      ON v.session_id = h.session_id AND v.authoritative AND v.recorded_at < h.first_assigned_at
), measured AS (
    SELECT k.experiment_id, k.user_id, am.metric,
           CAST(round({{value_of_metric}} / am.resolution) AS HUGEINT) AS y
    FROM known k JOIN analysed_metrics am ON am.experiment_id = k.experiment_id
    WHERE k.k = 1
)
SELECT experiment_id, metric, user_id, CAST(round(sum(y) * 1000000 / count(*)) AS HUGEINT) AS x
FROM measured WHERE y IS NOT NULL
GROUP BY experiment_id, metric, user_id
