-- Row conservation of one landing table on the days of a run ($days): raw rows of the current
-- landed files (as counted when archived) = staged + contract-quarantined rows.
-- {staged} is a staged table name from the fixed list in contracts.tables.
WITH days AS (
    SELECT CAST(unnest($days::VARCHAR[]) AS DATE) AS partition_day
), raw AS (
    SELECT partition_day, sum(row_count) AS n FROM landing_manifest
    WHERE table_name = $table AND superseded_at IS NULL AND partition_day IN (SELECT partition_day FROM days) GROUP BY ALL
), staged AS (
    SELECT partition_day, count(*) AS n FROM {staged} WHERE partition_day IN (SELECT partition_day FROM days) GROUP BY ALL
), quarantined AS (
    SELECT partition_day, count(*) AS n FROM quarantine
    WHERE source_table = $table AND stage = 'contract' AND partition_day IN (SELECT partition_day FROM days) GROUP BY ALL
)
SELECT CAST(d.partition_day AS VARCHAR) AS partition_day,
       coalesce(r.n, 0) AS raw_rows, coalesce(s.n, 0) AS staged_rows, coalesce(q.n, 0) AS quarantined_rows
FROM days d
LEFT JOIN raw r USING (partition_day) LEFT JOIN staged s USING (partition_day)
LEFT JOIN quarantined q USING (partition_day)
WHERE coalesce(r.n, 0) <> coalesce(s.n, 0) + coalesce(q.n, 0)
ORDER BY 1
