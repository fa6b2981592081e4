-- The daily counts behind loop_health (aggregate_loop_health_days.sql), kept so that a night
-- recomputes only the days from the first one its changes touch.
CREATE TABLE IF NOT EXISTS internal.loop_health_days (
    org_id VARCHAR, day DATE, sessions BIGINT, sessions_with_outcome BIGINT, verified_sessions BIGINT,
    verified_failures BIGINT, repeated_failures BIGINT
)
