-- Candidates whose key repeats an earlier candidate of this partition or a row staged in
-- another partition. {key} and {staged} come from the contract fixed lists.
WITH ranked AS (
    SELECT row_index, {key},
           row_number() OVER (PARTITION BY {key} ORDER BY source_file, source_row) AS k
    FROM candidate
)
SELECT r.row_index, 'earlier in this partition' AS where_found
FROM ranked r WHERE r.k > 1
UNION ALL
SELECT r.row_index, 'in partition ' || CAST(min(s.partition_day) AS VARCHAR)
FROM ranked r JOIN {staged} s USING ({key})
WHERE r.k = 1 AND s.partition_day <> CAST($day AS DATE)
GROUP BY r.row_index
