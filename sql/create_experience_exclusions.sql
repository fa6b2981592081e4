-- The staged assignments kept out of the experience table, with the rule that excluded each
-- (quarantine stage 'experience' says why in words): the experience stage rebuilds the rows
-- of the sessions a night's changes touch, and finds their earlier exclusions here.
CREATE TABLE IF NOT EXISTS internal.experience_exclusions (
    partition_day DATE, source_file VARCHAR, source_row BIGINT, experiment_id VARCHAR, session_id VARCHAR,
    unit_id VARCHAR, arm VARCHAR, delivered_arm VARCHAR, session_experiment_id VARCHAR, exclusion VARCHAR
)
