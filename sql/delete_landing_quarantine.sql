DELETE FROM quarantine WHERE stage = 'landing'
