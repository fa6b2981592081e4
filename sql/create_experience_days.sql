-- The daily counts of the experience (aggregate_experience_days.sql), per experiment, arm, UTC
-- day of assignment, UTC day its verified outcome was recorded (NULL: not verified), the
-- session's model and budget, and the evaluator of its verified outcome (and whether it is the
-- session's only authoritative outcome); kept so that a night recounts only the experiments and
-- days its experience changes touch. The report's sessions and verified sessions as of a look,
-- the segment breakdowns and the evaluators a knowledge record cites sum or read them.
CREATE TABLE IF NOT EXISTS internal.experience_days (
    experiment_id VARCHAR, arm VARCHAR, is_control BOOLEAN, day DATE, verified_day DATE, model VARCHAR,
    budget DOUBLE, evaluator_id VARCHAR, evaluator_version VARCHAR, evaluator_kind VARCHAR, single_outcome BOOLEAN,
    sessions BIGINT, rated_sessions BIGINT, successes BIGINT
)
