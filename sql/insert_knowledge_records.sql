-- Append only: records are never updated or deleted.
INSERT INTO knowledge_records BY NAME SELECT *, current_timestamp AS recorded_at FROM records_batch
