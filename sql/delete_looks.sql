-- The nights of the batch are replaced (the look asked for and any caught-up nights).
DELETE FROM experiment_analysis WHERE as_of IN (SELECT as_of FROM nights_batch)
