-- Arm diversity verdicts of the last build (find_repeated_arms), kept for the checks and the report.
CREATE OR REPLACE TABLE arm_repeats AS SELECT * FROM arm_repeats_batch
