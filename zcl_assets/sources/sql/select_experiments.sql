-- Every experiment of the source (a small table, read whole on every run), in id order.
SELECT e.id::text AS experiment_id, e.hypothesis::text AS hypothesis, e.task_type::text AS task_type,
       e.treatment::text AS treatment, e.control::text AS control, e.status::text AS status,
       e.started_at, e.completed_at
FROM {experiments} e
ORDER BY e.id::text COLLATE "C"
