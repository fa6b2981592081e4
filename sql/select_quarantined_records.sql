-- Quarantined rows that may belong to an experiment (their keys are read in look.py).
SELECT source_table, stage, partition_day, record FROM quarantine
WHERE stage IN ('contract', 'experience') AND source_table IN ('assignments', 'outcomes', 'arm_snapshots')
