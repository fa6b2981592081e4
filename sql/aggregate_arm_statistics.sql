-- Sufficient statistics per experiment, arm and metric as of one look ($as_of_end: the
-- end of the look's UTC day). The analysis unit is the randomization unit: for a
-- user-randomized experiment the moments of per-unit sums (Deng, Lu, Litz 2018), for a
-- session-randomized one each session is its own unit (m = 1). Time and tokens are capped
-- at the registered metric_caps. Only verified outcomes enter.
WITH registered AS (
    SELECT experiment_id, randomization_unit,
           TRY_CAST(json_extract_string(metric_caps, '$.time_minutes') AS DOUBLE) AS cap_time,
           TRY_CAST(json_extract_string(metric_caps, '$.tokens') AS DOUBLE) AS cap_tokens
    FROM staged_experiments
), observed AS (
    SELECT x.experiment_id, x.arm, r.randomization_unit,
           CASE WHEN r.randomization_unit = 'user' THEN x.unit_id ELSE x.session_id END AS unit,
           m.metric, m.value
    FROM experience x JOIN registered r USING (experiment_id)
    CROSS JOIN LATERAL (VALUES
        ('success', x.success),
        ('time_minutes', least(x.time_minutes, coalesce(r.cap_time, x.time_minutes))),
        ('tokens', least(x.tokens, coalesce(r.cap_tokens, x.tokens))),
        ('score', x.score)) AS m(metric, value)
    WHERE x.assigned_at < $as_of_end AND x.verified AND x.recorded_at < $as_of_end AND m.value IS NOT NULL
), per_unit AS (
    SELECT experiment_id, arm, randomization_unit, metric, unit, sum(value) AS y, count(*) AS m
    FROM observed GROUP BY ALL
)
SELECT experiment_id, arm, metric, randomization_unit,
       count(*) AS n_units, sum(m) AS n_obs,
       sum(y) AS sum_y, sum(y * y) AS sum_y2, sum(m) AS sum_m, sum(m * m) AS sum_m2, sum(y * m) AS sum_ym,
       sum(y) / sum(m) AS mean,
       CASE WHEN max(m) = 1 THEN var_samp(y) END AS variance
FROM per_unit GROUP BY ALL
ORDER BY ALL
