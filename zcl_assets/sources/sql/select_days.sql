-- One table's rows of the UTC days listed in $2 (comma-separated), none before $1 (so an
-- index on the timestamp can serve the range), in day and source id order.
SELECT q.*
FROM ({rows}) q
WHERE q.{time_column} >= $1 AND q.day = ANY(string_to_array($2, ',')::date[])
ORDER BY q.day, q.source_id COLLATE "C"
