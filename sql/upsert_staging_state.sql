INSERT INTO internal.staging_state VALUES ($table, 1, $checked)
ON CONFLICT (table_name) DO UPDATE SET version = version + 1, checked_against = excluded.checked_against
