DELETE FROM quarantine WHERE stage = 'experience'
