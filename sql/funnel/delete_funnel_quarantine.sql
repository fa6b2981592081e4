DELETE FROM quarantine WHERE stage = 'funnel'
