INSERT INTO internal.derived_state VALUES ($name, $fingerprint, current_timestamp)
ON CONFLICT (name) DO UPDATE SET fingerprint = excluded.fingerprint, built_at = excluded.built_at
