-- Plans are frozen: only experiments without a plan get one.
INSERT INTO experiment_plans BY NAME
SELECT b.*, current_timestamp AS planned_at FROM plans_batch b ANTI JOIN experiment_plans p USING (experiment_id)
