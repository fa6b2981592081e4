-- Raw rows of one table and day, with every contract field extracted as text and cast.
-- The field columns are generated from the fixed field list in contracts.tables.
WITH raw AS (
    SELECT source_file, source_row, record,
           CASE WHEN json_valid(record) THEN json_type(record) = 'OBJECT' ELSE false END AS is_object
    FROM raw_records
    WHERE table_name = $table AND partition_day = CAST($day AS DATE)
)
SELECT source_file, source_row, record, is_object,
    {field_columns}
FROM raw
ORDER BY source_file, source_row
