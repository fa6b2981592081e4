-- The table's contract quarantine rows that this staging pass rewrites: those of the
-- pending days, and every row held by a cross-row rule (re-checked on every pass).
DELETE FROM quarantine
WHERE source_table = $table AND stage = 'contract'
  AND (partition_day IN (SELECT partition_day FROM pending) OR list_contains($cross_row_rules, rule))
