-- {staged} is a staged table name from the fixed list in contracts.tables.
INSERT INTO {staged} BY NAME SELECT CAST($day AS DATE) AS partition_day, * FROM staged_batch
