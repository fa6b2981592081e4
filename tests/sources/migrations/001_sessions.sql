-- The sessions and outcomes of the ZCL schema that migrations/004_experiments.sql refers to
-- (seed note 000 names zcl_sessions and zcl_outcomes(session_id, success, time_minutes) but
-- not their other columns): the columns the PostgreSQL source reads (docs/postgres.md).
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";

CREATE TABLE zcl_sessions (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    organization_id VARCHAR(100) NOT NULL,
    user_id VARCHAR(100) NOT NULL,
    task_type VARCHAR(100) NOT NULL,
    model VARCHAR(100),
    is_experimental BOOLEAN NOT NULL DEFAULT FALSE,
    experiment_id UUID,
    experiment_group VARCHAR(20),
    started_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    ended_at TIMESTAMPTZ
);

CREATE TABLE zcl_outcomes (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    session_id UUID NOT NULL REFERENCES zcl_sessions(id) ON DELETE CASCADE,
    success BOOLEAN NOT NULL,
    time_minutes FLOAT,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

CREATE INDEX idx_sessions_started ON zcl_sessions(started_at);
CREATE INDEX idx_outcomes_session ON zcl_outcomes(session_id);
CREATE INDEX idx_outcomes_recorded ON zcl_outcomes(recorded_at);
