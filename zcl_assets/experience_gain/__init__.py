"""Experience Gain (seed note 002, section 15): the primary score with recall of past experience
minus the score without, same task, model and budget; per task and pooled across tasks, with a
claim level that says how far the evidence goes. No Dagster imports."""
