-- Bookkeeping of staging that analysts need not see.
CREATE SCHEMA IF NOT EXISTS internal
