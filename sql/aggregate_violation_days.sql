-- Rows of each experiment per UTC landing day, and how many of them were quarantined:
-- assignments (contract and experience stages) and outcomes of its sessions; for aggregate
-- exports, the snapshot rows of its primary metric; for the days in dirty_days(day) and the
-- experiments in dirty_experiments(experiment_id) (registered frames; a first build has
-- every day). Registered frame quarantined_keys(source_table, stage, partition_day,
-- experiment_id, session_id, metric): the keys read from the quarantined records of those
-- days (look_state.py; a malformed record has none).
WITH q AS (
    SELECT * FROM quarantined_keys WHERE partition_day IS NOT NULL
), dirty_sessions AS (
    -- the sessions of the dirty experiments (none on most nights)
    SELECT session_id, experiment_id FROM staged_sessions
    WHERE experiment_id IN (SELECT experiment_id FROM dirty_experiments)
), day_outcomes AS (
    SELECT session_id, partition_day FROM staged_outcomes WHERE partition_day IN (SELECT day FROM dirty_days)
), day_sessions AS (
    -- the sessions of those outcomes, looked up by their ids: joined whole, the staged sessions
    -- were read in full (10M rows at 10M sessions), the planner not knowing how few days are dirty
    SELECT session_id, experiment_id FROM staged_sessions
    WHERE experiment_id IS NOT NULL AND session_id IN (SELECT session_id FROM day_outcomes)
), rows_of AS (
    -- each branch reads the rows of the dirty days, or of the dirty experiments on other days,
    -- never a whole table joined before it is filtered
    SELECT experiment_id, partition_day AS day, 0 AS bad FROM staged_assignments
    WHERE partition_day IN (SELECT day FROM dirty_days)
    UNION ALL
    SELECT experiment_id, partition_day, 0 FROM staged_assignments
    WHERE experiment_id IN (SELECT experiment_id FROM dirty_experiments) AND partition_day NOT IN (SELECT day FROM dirty_days)
    UNION ALL
    SELECT s.experiment_id, o.partition_day, 0 FROM day_outcomes o JOIN day_sessions s USING (session_id)
    UNION ALL
    SELECT s.experiment_id, o.partition_day, 0 FROM staged_outcomes o JOIN dirty_sessions s USING (session_id)
    WHERE o.partition_day NOT IN (SELECT day FROM dirty_days)
    UNION ALL
    SELECT experiment_id, partition_day, 1 FROM q
    WHERE source_table = 'assignments' AND stage IN ('contract', 'experience')
    UNION ALL
    SELECT s.experiment_id, q.partition_day, 1 FROM q JOIN staged_sessions s USING (session_id)
    WHERE q.source_table = 'outcomes' AND q.stage = 'contract' AND s.experiment_id IS NOT NULL
    UNION ALL
    SELECT a.experiment_id, a.partition_day, 0 FROM staged_arm_snapshots a
    JOIN staged_experiments e ON e.experiment_id = a.experiment_id AND a.metric = e.primary_metric
    WHERE a.partition_day IN (SELECT day FROM dirty_days) OR a.experiment_id IN (SELECT experiment_id FROM dirty_experiments)
    UNION ALL
    SELECT q.experiment_id, q.partition_day, 1 FROM q
    JOIN staged_experiments e ON e.experiment_id = q.experiment_id AND q.metric = e.primary_metric
    WHERE q.source_table = 'arm_snapshots' AND q.stage = 'contract'
)
SELECT experiment_id, day, CAST(sum(bad) AS BIGINT) AS bad, count(*) AS total FROM rows_of
WHERE experiment_id IS NOT NULL
  AND (day IN (SELECT day FROM dirty_days) OR experiment_id IN (SELECT experiment_id FROM dirty_experiments))
GROUP BY ALL
