"""The analyst's view: one report per experiment in the UI, and the night's report over all of them."""
