-- Per UTC day of one table's rows at or after $1: the count, an order-free digest of the rows
-- as they land (the sum of the first 64 bits of each row's MD5) and the latest timestamp.
SELECT q.day, count(*) AS n,
       sum(('x' || substr(md5(q::text), 1, 16))::bit(64)::bigint::numeric)::text AS digest,
       max(q.{time_column}) AS latest
FROM ({rows}) q
WHERE q.{time_column} >= $1
GROUP BY q.day
ORDER BY q.day
