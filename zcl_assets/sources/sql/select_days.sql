-- One table's rows of the UTC days {days} (a list of DATE literals), none before {start} (so an
-- index on the timestamp can serve the range), in day and source id order. The values are
-- literals, not bound parameters: the driver streams a query without parameters through COPY,
-- while a prepared statement's whole result would be held in memory first.
SELECT q.*
FROM ({rows}) q
WHERE q.{time_column} >= {start} AND q.day IN ({days})
ORDER BY q.day, q.source_id COLLATE "C"
