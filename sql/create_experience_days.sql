-- The daily counts of the experience (aggregate_experience_days.sql), per experiment, arm, UTC
-- day of assignment, UTC day its verified outcome was recorded (NULL: not verified), the
-- session's model and budget, and the evaluator of its verified outcome (and whether it is the
-- session's only authoritative outcome): sessions, and of the verified ones with a value of the
-- experiment's primary metric their count and the exact sums of the value and its square at the
-- metric's resolution. Kept so that a night recounts only the experiments and days its experience
-- changes touch; the report's sessions and verified sessions as of a look, the segment breakdowns
-- and the evaluators a knowledge record cites sum or read them.
CREATE TABLE IF NOT EXISTS internal.experience_days (
    experiment_id VARCHAR, arm VARCHAR, is_control BOOLEAN, day DATE, verified_day DATE, model VARCHAR,
    budget DOUBLE, evaluator_id VARCHAR, evaluator_version VARCHAR, evaluator_kind VARCHAR, single_outcome BOOLEAN,
    sessions BIGINT, valued BIGINT, value_sum HUGEINT, value_squares HUGEINT
)
