-- Row conservation of one partition: raw = staged + quarantined. {staged} from the fixed list.
SELECT
    (SELECT count(*) FROM raw_records WHERE table_name = $table AND partition_day = CAST($day AS DATE)) AS raw_rows,
    (SELECT count(*) FROM {staged} WHERE partition_day = CAST($day AS DATE)) AS staged_rows,
    (SELECT count(*) FROM quarantine WHERE source_table = $table AND partition_day = CAST($day AS DATE)
        AND stage = 'contract') AS quarantined_rows
