CREATE TABLE IF NOT EXISTS experiment_plans (
    experiment_id VARCHAR PRIMARY KEY, planned_n_per_arm DOUBLE, n_fixed_per_arm DOUBLE,
    comparison_alpha DOUBLE, inflation DOUBLE, allocation_ratio DOUBLE, n_guardrails BIGINT,
    reachable BOOLEAN, plan_reason VARCHAR, planned_at TIMESTAMPTZ NOT NULL
);
