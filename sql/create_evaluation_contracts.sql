CREATE OR REPLACE TABLE evaluation_contracts AS
SELECT task_type, authoritative_kinds, source FROM evaluation_contracts_batch
