SELECT (SELECT count(*) FROM staged_assignments) AS staged_assignments,
       (SELECT count(*) FROM experience) AS experience_rows,
       (SELECT count(*) FROM quarantine WHERE stage = 'experience' AND source_table = 'assignments') AS quarantined
