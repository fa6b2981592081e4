-- Registration-stage quarantine: refused registrations (frozen with their plans, so added
-- once, or again with a family planned again) and declared allocation changes that cannot be used (recomputed every run).
DELETE FROM quarantine WHERE stage = 'registration' AND rule = 'bad_allocation_change';
INSERT INTO quarantine (source_table, partition_day, source_file, source_row, stage, rule, reason, record, quarantined_at)
SELECT source_table, partition_day, source_file, source_row, stage, rule, reason, record, current_timestamp
FROM (SELECT * FROM refused_batch UNION ALL BY NAME SELECT * FROM bad_changes_batch);
