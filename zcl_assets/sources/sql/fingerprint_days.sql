-- Per UTC day of one table's rows at or after $1: the count, an order-free digest of the rows
-- as they land (the sum of each row's 64-bit text hash, the hash PostgreSQL's hash partitions
-- rely on, so it is stable across versions) and the latest timestamp.
SELECT q.day, count(*) AS n, sum(hashtextextended(q::text, 0))::text AS digest, max(q.{time_column}) AS latest
FROM ({rows}) q
WHERE q.{time_column} >= $1
GROUP BY q.day
ORDER BY q.day
