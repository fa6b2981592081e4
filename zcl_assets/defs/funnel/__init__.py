"""The exploration funnel: admission states, stage counts, information yield, budget checks, exploration monitor."""
