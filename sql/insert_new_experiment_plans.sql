-- Plans are frozen: only experiments without a plan get one (the plans of a family planned again
-- were deleted first, sql/delete_replaced_plans.sql).
INSERT INTO experiment_plans BY NAME
SELECT b.*, current_timestamp AS planned_at FROM plans_batch b ANTI JOIN experiment_plans p USING (experiment_id)
