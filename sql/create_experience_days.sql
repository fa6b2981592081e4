-- The daily counts of the experience (aggregate_experience_days.sql), per experiment, arm, UTC
-- day of assignment, UTC day its verified outcome was recorded (NULL: not verified), and the
-- session's model and budget; kept so that a night recounts only the experiments and days its
-- experience changes touch. The report's sessions and verified sessions as of a look and the
-- segment breakdowns sum them.
CREATE TABLE IF NOT EXISTS internal.experience_days (
    experiment_id VARCHAR, arm VARCHAR, is_control BOOLEAN, day DATE, verified_day DATE, model VARCHAR,
    budget DOUBLE, sessions BIGINT, rated_sessions BIGINT, successes BIGINT
)
