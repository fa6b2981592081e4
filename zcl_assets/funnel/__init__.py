"""The exploration funnel (seed note 001, DESIGN lesson 12): admission lifecycle, budgets charged
at launch, information yield and the exploration monitor. No Dagster imports."""
