-- The daily counts behind loop_health and the family outlook (aggregate_loop_health_days.sql),
-- per organization, task type and UTC day of the session start, kept so that a night
-- recomputes only the days from the first one its changes touch.
CREATE TABLE IF NOT EXISTS internal.loop_health_days (
    org_id VARCHAR, task_type VARCHAR, day DATE, sessions BIGINT, sessions_with_outcome BIGINT,
    verified_sessions BIGINT, verified_successes BIGINT, verified_failures BIGINT, repeated_failures BIGINT
)
