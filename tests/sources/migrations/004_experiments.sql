-- migrations/004_experiments.sql of seed note 000: the proposed change and the per-session
-- assignment, with the two constraints that do real work, the indexes of both access
-- patterns, get_experiment_outcomes and experiment_ready_for_analysis.
CREATE TABLE zcl_experiments (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    hypothesis TEXT NOT NULL,
    task_type VARCHAR(100) NOT NULL,
    treatment JSONB NOT NULL,
    control JSONB NOT NULL,
    status VARCHAR(20) NOT NULL DEFAULT 'active', -- active, completed, cancelled
    results JSONB,
    started_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    completed_at TIMESTAMPTZ,
    CONSTRAINT valid_status CHECK (status IN ('active', 'completed', 'cancelled'))
);

CREATE TABLE zcl_experiment_assignments (
    id UUID PRIMARY KEY DEFAULT uuid_generate_v4(),
    session_id UUID NOT NULL REFERENCES zcl_sessions(id) ON DELETE CASCADE,
    experiment_id UUID NOT NULL REFERENCES zcl_experiments(id) ON DELETE CASCADE,
    group_name VARCHAR(20) NOT NULL, -- treatment, control
    assigned_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    UNIQUE(session_id, experiment_id),
    CONSTRAINT valid_group CHECK (group_name IN ('treatment', 'control'))
);

CREATE INDEX idx_experiments_task_type ON zcl_experiments(task_type);
CREATE INDEX idx_experiments_status ON zcl_experiments(status);
CREATE INDEX idx_experiments_active ON zcl_experiments(task_type) WHERE status = 'active';
CREATE INDEX idx_assignments_lookup ON zcl_experiment_assignments(experiment_id, session_id);
CREATE INDEX idx_assignments_session ON zcl_experiment_assignments(session_id);
CREATE INDEX idx_assignments_group ON zcl_experiment_assignments(experiment_id, group_name);
CREATE INDEX idx_assignments_assigned ON zcl_experiment_assignments(assigned_at);

CREATE OR REPLACE FUNCTION get_experiment_outcomes(p_experiment_id UUID)
RETURNS TABLE (
    group_name VARCHAR,
    total_sessions BIGINT,
    successful_sessions BIGINT,
    success_rate FLOAT,
    avg_time_minutes FLOAT
) AS $$
BEGIN
    RETURN QUERY
    SELECT
        ea.group_name::VARCHAR,
        COUNT(*)::BIGINT AS total_sessions,
        SUM(CASE WHEN o.success THEN 1 ELSE 0 END)::BIGINT AS successful_sessions,
        AVG(CASE WHEN o.success THEN 1.0 ELSE 0.0 END)::FLOAT AS success_rate,
        AVG(o.time_minutes)::FLOAT AS avg_time_minutes
    FROM zcl_experiment_assignments ea
    JOIN zcl_outcomes o ON ea.session_id = o.session_id
    WHERE ea.experiment_id = p_experiment_id
    GROUP BY ea.group_name;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION experiment_ready_for_analysis(p_experiment_id UUID, p_min_per_group INTEGER DEFAULT 5)
RETURNS BOOLEAN AS $$
BEGIN
    RETURN (
        SELECT COUNT(*) = 2 AND MIN(n) >= p_min_per_group
        FROM (SELECT group_name, COUNT(*) AS n FROM zcl_experiment_assignments
              WHERE experiment_id = p_experiment_id GROUP BY group_name) g
    );
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE VIEW v_experiment_results AS
SELECT e.id, e.task_type, e.status, e.started_at, e.completed_at,
       COUNT(*) FILTER (WHERE a.group_name = 'treatment') AS treatment_count,
       COUNT(*) FILTER (WHERE a.group_name = 'control') AS control_count
FROM zcl_experiments e
LEFT JOIN zcl_experiment_assignments a ON a.experiment_id = e.id
GROUP BY e.id;
