-- The table's contract quarantine rows that this staging pass rewrites: those of the
-- pending days, and the rows of other days it re-checks (temp table recheck) that a
-- cross-row rule had quarantined.
DELETE FROM quarantine
WHERE source_table = $table AND stage = 'contract'
  AND (partition_day IN (SELECT partition_day FROM pending)
       OR (list_contains($cross_row_rules, rule) AND EXISTS (
           SELECT 1 FROM recheck r WHERE r.partition_day = quarantine.partition_day
             AND r.source_file = quarantine.source_file AND r.source_row = quarantine.source_row)))
