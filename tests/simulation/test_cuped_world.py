"""CUPED through the production look in a world of returning users, reduced (``benchmarks/simulate_cuped.py``
runs the full size; figures in docs/statistics.md section 13).

Families of K = 4 binary experiments with one to four treatment arms (``simulation.families``), whose
units are sessions of users with a pre-experiment mean success (``simulation.returning``), planned
against a history drawn from the same world and looked at every night by ``engine.analyse``.
Assertions allow 3 Monte Carlo standard errors in the direction the target allows.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from zcl_assets.analysis.engine import analyse
from zcl_assets.simulation.families import FamilyDesign, family_error_rates, simulate_families
from zcl_assets.simulation.returning import ReturningUsers, draw_units
from zcl_assets.stats.cuped import difference_share


@pytest.mark.parametrize("correlation", [0.3, 0.5, 0.7])
def test_the_world_has_the_correlation_and_the_effect_it_is_given(correlation):
    world = ReturningUsers(correlation=correlation)
    rng = np.random.default_rng(7)
    control = draw_units(rng, world, 0.3, np.zeros(200_000))
    treated = draw_units(rng, world, 0.3, np.full(200_000, 0.05))
    # sampling s.e. of a correlation near 0.5 at n = 200,000: (1 - 0.25) / sqrt(n) = 0.0017
    assert np.corrcoef(control.x, control.y)[0, 1] == pytest.approx(correlation, abs=0.01)
    # of a rate: sqrt(0.21 / n) = 0.001
    assert control.y.mean() == pytest.approx(0.30, abs=0.005) and treated.y.mean() == pytest.approx(0.35, abs=0.005)


def _first_arms(design: FamilyDesign, families: int, seed: int) -> pl.DataFrame:
    """Per experiment, its first treatment arm: adopted by the night its plan is reached, the sessions of both
    arms at its first adopt (inf: never), and the variance reduction of its last night."""
    look = analyse(simulate_families(families, design, seed=seed)[0]).filter(
        pl.col("is_primary") & (pl.col("treatment_arm") == "t1"))
    reached = pl.when(pl.col("information_fraction") >= 1).then(pl.col("as_of")).min().over("experiment_id")
    adopt = pl.col("decision") == "adopt"
    return look.sort("as_of").with_columns(reached.alias("reached")).group_by("experiment_id").agg(
        (adopt & (pl.col("as_of") <= pl.col("reached"))).any().alias("adopted_by_plan"),
        (pl.col("n_control") + pl.col("n_treatment")).filter(adopt).min().cast(pl.Float64).fill_null(float("inf"))
        .alias("sessions"),
        pl.col("variance_reduction").last()).sort("experiment_id")


def test_the_plan_counts_on_what_the_look_then_removes_and_keeps_its_power():
    """At correlation 0.5 the covariate explains 0.25 of the control's variance; a treatment acting on the
    failures keeps 1 - 0.05 / 0.7 of the covariance, so the difference's variance falls by
    difference_share(0.25, 0.21, 0.2275, kept=0.9286) = 0.2235: what the plan counts on, less its bound."""
    design = FamilyDesign(effect=0.05, first_arm_only=True, units_per_arm_night=160.0, nights=30,
                          returning=ReturningUsers(correlation=0.5))
    first = _first_arms(design, 150, seed=23)
    reduced = first.get_column("variance_reduction").to_numpy()
    expected = float(difference_share(0.25, 0.21, 0.2275, kept=1 - 0.05 / 0.7))
    # 600 experiments, the reduction of each measured at about 4,800 units: its mean within 0.01
    assert reduced.mean() == pytest.approx(expected, abs=0.01)
    power = first.get_column("adopted_by_plan").mean()
    assert power >= 0.8 - 3 * np.sqrt(0.8 * 0.2 / first.height)  # 0.751 at 600; full size 0.820 (s.e. 0.004)


def test_cuped_spends_fewer_sessions_on_a_correct_adopt():
    """The same units analysed without and with CUPED (correlation 0.5, 50 units an arm a night, 90 nights):
    the median sessions to the first arm's adopt fall by about the variance the covariate removes (0.207,
    s.e. 0.006, at full size); here, 400 experiments, the bootstrap s.e. is about 0.025."""
    runs = {}
    for cuped in (False, True):
        design = FamilyDesign(effect=0.05, first_arm_only=True, units_per_arm_night=50.0, nights=90,
                              returning=ReturningUsers(correlation=0.5), cuped=cuped)
        runs[cuped] = _first_arms(design, 100, seed=29).get_column("sessions").to_numpy()
    reduction = 1 - np.median(runs[True]) / np.median(runs[False])
    draws = np.random.default_rng(3).integers(0, runs[True].size, size=(500, runs[True].size))
    se = np.std(1 - np.median(runs[True][draws], axis=1) / np.median(runs[False][draws], axis=1))
    assert se < 0.05 and reduction >= 0.2 - 3 * se


def test_aa_families_keep_their_error_with_cuped_plans():
    """No effect, correlation 0.7 (the largest reduction, so the smallest plans and CS tunings): families
    with any adopt or reject at most alpha = 0.05 (full size: see docs/statistics.md section 13)."""
    design = FamilyDesign(units_per_arm_night=60.0, nights=30, returning=ReturningUsers(correlation=0.7))
    rates = family_error_rates(analyse(simulate_families(300, design, seed=31)[0]))
    assert rates["families_n"] == 300
    assert rates["families"] <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)
