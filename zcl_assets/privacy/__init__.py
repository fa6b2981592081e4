"""Privacy: redaction of secrets and personal data, pseudonymisation of user ids (no Dagster)."""
