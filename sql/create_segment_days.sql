-- The daily counts behind segment_breakdowns (aggregate_segment_days.sql), per experiment, arm,
-- dimension (the session's model or budget), segment and UTC day of assignment, kept so that a
-- night recounts only the experiments and days its experience changes touch.
CREATE TABLE IF NOT EXISTS internal.segment_days (
    experiment_id VARCHAR, arm VARCHAR, is_control BOOLEAN, dimension VARCHAR, segment VARCHAR, day DATE,
    sessions BIGINT, successes BIGINT
)
