-- {staged} is a staged table name from the fixed list in contracts.tables.
DELETE FROM {staged} WHERE partition_day = CAST($day AS DATE)
