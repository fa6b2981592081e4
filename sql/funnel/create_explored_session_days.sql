-- The daily counts behind exploration_share (aggregate_explored_session_days.sql), kept so that
-- a night counts only the days whose sessions changed.
CREATE TABLE IF NOT EXISTS internal.explored_session_days (
    org_id VARCHAR, task_type VARCHAR, day DATE, sessions BIGINT, explored BIGINT, in_experiments BIGINT,
    from_admissions BIGINT
)
