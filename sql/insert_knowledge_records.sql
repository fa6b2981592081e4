-- Append only: records are never updated or deleted.
INSERT INTO knowledge_records BY NAME SELECT *, now() AS recorded_at FROM records_batch
