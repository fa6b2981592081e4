-- Row conservation of one landing table over every day: raw rows of the current landed files
-- (as counted when archived) = staged + contract-quarantined rows.
-- {staged} is a staged table name from the fixed list in contracts.tables.
WITH raw AS (
    SELECT partition_day, sum(row_count) AS n FROM landing_manifest
    WHERE table_name = $table AND superseded_at IS NULL GROUP BY ALL
), staged AS (
    SELECT partition_day, count(*) AS n FROM {staged} GROUP BY ALL
), quarantined AS (
    SELECT partition_day, count(*) AS n FROM quarantine
    WHERE source_table = $table AND stage = 'contract' GROUP BY ALL
)
SELECT CAST(d.partition_day AS VARCHAR) AS partition_day,
       coalesce(r.n, 0) AS raw_rows, coalesce(s.n, 0) AS staged_rows, coalesce(q.n, 0) AS quarantined_rows
FROM (SELECT partition_day FROM raw UNION SELECT partition_day FROM staged
      UNION SELECT partition_day FROM quarantined) d
LEFT JOIN raw r USING (partition_day) LEFT JOIN staged s USING (partition_day)
LEFT JOIN quarantined q USING (partition_day)
WHERE coalesce(r.n, 0) <> coalesce(s.n, 0) + coalesce(q.n, 0)
ORDER BY 1
