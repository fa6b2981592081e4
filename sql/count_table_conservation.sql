-- Row conservation of one landing table over every partition: raw = staged + quarantined.
-- {staged} is a staged table name from the fixed list in contracts.tables.
WITH raw AS (
    SELECT partition_day, count(*) AS n FROM raw_records WHERE table_name = $table GROUP BY ALL
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
