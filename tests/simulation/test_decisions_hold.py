"""With a true effect equal to the MDE, no adopt reverts at a later look (production path).

Before the running intersection, 34% of adopts read weaker at a later look: tonight's CS alone
widens again when a lucky early stretch is diluted. Families of ``simulation.families`` (every
arm better by the MDE, 160 units an arm a night, 30 looks) through ``engine.analyse``.
"""

import polars as pl

from zcl_assets.analysis.engine import analyse
from zcl_assets.simulation.families import FamilyDesign, simulate_families

N_FAMILIES = 60


def test_no_adopt_reverts_and_labels_never_weaken():
    inputs, _ = simulate_families(N_FAMILIES, FamilyDesign(effect=0.05, units_per_arm_night=160.0), seed=77)
    look = analyse(inputs).filter(pl.col("is_primary")).sort("experiment_id", "treatment_arm", "as_of")
    key = ["experiment_id", "treatment_arm"]
    walked = look.with_columns(
        (pl.col("decision") == "adopt").cum_max().over(key).alias("adopted_before"),
        pl.col("decision").is_in(["adopt", "reject"]).cum_max().over(key).alias("decided_before"))
    adopted = walked.filter(pl.col("adopted_before"))
    assert adopted.get_column("experiment_id").n_unique() > N_FAMILIES  # many adopts to revert
    # once adopted, every later look of the comparison is adopt (or invalid, with its reason)
    assert adopted.filter(~pl.col("decision").is_in(["adopt", "invalid"])).height == 0
    # and no decided comparison goes back to continue or inconclusive
    assert walked.filter(pl.col("decided_before") & pl.col("decision").is_in(["continue", "inconclusive"])).height == 0
    # read on tonight's CS alone, a good share would have reverted (138 of 569 at this seed)
    night = look.with_columns((pl.col("cs_night_low") > 0).fill_null(False).alias("excludes")).with_columns(
        pl.col("excludes").cum_max().over(key).alias("excluded_before"))
    reverted = night.filter(pl.col("excluded_before") & ~pl.col("excludes")).select(key).unique().height
    assert reverted > 0.1 * night.filter(pl.col("excluded_before")).select(key).unique().height
