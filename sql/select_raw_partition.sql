-- Raw rows of one table and day, with every contract field extracted as text (one JSON
-- parse per row) and cast. The field list and the column expressions are generated from
-- the fixed field list in contracts.tables.
WITH raw AS (
    SELECT source_file, source_row, record,
           CASE WHEN json_valid(record) THEN json_type(record) = 'OBJECT' ELSE false END AS is_object
    FROM raw_records
    WHERE table_name = $table AND partition_day = CAST($day AS DATE)
), extracted AS (
    SELECT *, CASE WHEN is_object THEN json_extract_string(record, {paths}) END AS v FROM raw
)
SELECT source_file, source_row, record, is_object,
    {field_columns}
FROM extracted
ORDER BY source_file, source_row
