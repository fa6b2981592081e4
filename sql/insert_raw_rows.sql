INSERT INTO raw_records (table_name, partition_day, source_file, source_row, record)
SELECT $table, CAST($day AS DATE), source_file, source_row, record FROM raw_batch
