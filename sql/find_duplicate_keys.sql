-- Rows of `subject` (the staged state after this run's replacements) whose key repeats an
-- earlier row, by (partition_day, source_file, source_row): the first row is kept, so a
-- correction and a fresh load of the same files keep the same row. {key} comes from the
-- contract's fixed list.
WITH repeated AS (
    SELECT {key} FROM subject GROUP BY ALL HAVING count(*) > 1
), ranked AS (
    SELECT s.partition_day, s.source_file, s.source_row,
           row_number() OVER w AS k,
           first_value(s.source_file) OVER w AS first_file,
           first_value(s.source_row) OVER w AS first_row,
           first_value(s.partition_day) OVER w AS first_day
    FROM subject s SEMI JOIN repeated USING ({key})
    WINDOW w AS (PARTITION BY {key} ORDER BY s.partition_day, s.source_file, s.source_row)
)
SELECT partition_day, source_file, source_row,
       'the key ({key_names}) repeats ' || first_file || ' row ' || CAST(first_row AS VARCHAR) || ' of '
       || CAST(first_day AS VARCHAR) || '; the first row is kept' AS reason
FROM ranked WHERE k > 1
