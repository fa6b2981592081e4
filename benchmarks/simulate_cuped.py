"""CUPED through the production look, in a world of returning users (docs/statistics.md section 13).

Families of K = 4 concurrent binary experiments with one to four treatment arms (baseline 0.30,
MDE 0.05), as ``benchmarks/simulate_families.py``, whose units are sessions of users who come
back (``zcl_assets.simulation.returning``): each returning user's covariate is its mean success
over 4 verified sessions before the experiment, correlated with its outcome at 0.3, 0.5 or 0.7.
Each family's registrations are planned against a history drawn from the same world (the
units of its 28 days before registration, as ``sql/measure_family_traffic.sql`` measures
them), and every night goes through ``engine.analyse``. The same units are analysed twice:
registered with ``cuped`` (the look adjusts, the plan counts on the history's reduction) and
without it. Figures with Monte Carlo standard errors.

1. Sessions: the first treatment arm better by the MDE (the case the plan is calibrated for),
   50 units an arm a night, 90 nights. The median sessions (both arms of the comparison) to
   its first ``adopt`` (never adopted: infinite), the reduction with CUPED (bootstrap s.e.,
   the experiments resampled in pairs), and the share adopted by the night the plan is
   reached. Target: a reduction of at least 20% at correlation 0.5. Worlds: correlation 0.3,
   0.5 and 0.7 with a treatment that turns a share of each user's failures into successes;
   0.5 with a treatment that adds the MDE to every user; 0.5 with 40% new users.
2. Power at the plan in the setting R is calibrated in (about 30 looks to the plan): 160
   units an arm a night, 30 nights, the same worlds. Target: at least 0.80.
3. A/A: no effect, 60 units an arm a night, 30 nightly looks: the share of families with any
   adopt or reject. Target: at most 0.05.
4. The plan's reduction measured on a small history (correlation 0.5, 40 to 2,000 history
   units): power at the plan when it counts on the history's own ``R^2`` (the plug-in) and on
   its lower 90% confidence bound (``registration.CUPED_PLAN_CONFIDENCE``).

Run: ``python benchmarks/simulate_cuped.py [families]`` (default 2,000 families a cell, 8,000
experiments; about 40 minutes on 2 cores); ``--quick`` for 200.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zcl_assets.analysis.engine import analyse  # noqa: E402
from zcl_assets.analysis.registration import RegistrationPolicy  # noqa: E402
from zcl_assets.simulation.families import FamilyDesign, simulate_families  # noqa: E402
from zcl_assets.simulation.returning import ReturningUsers  # noqa: E402

CHUNK = 250
BOOTSTRAP = 1000


def outcomes(design: FamilyDesign, n_families: int, seed: int, policy: RegistrationPolicy | None = None) -> pl.DataFrame:
    """Per primary comparison: its arms, plan, whether it ever decided, whether it was adopted by
    the night its plan was reached, the sessions of both arms at its first adopt, and the
    variance reduction at its last night."""
    parts = []
    for i, start in enumerate(range(0, n_families, CHUNK)):
        m = min(CHUNK, n_families - start)
        inputs, _ = simulate_families(m, design, seed=seed * 1000 + i, policy=policy)
        look = analyse(inputs).filter(pl.col("is_primary"))
        key = ["chunk", "org_id", "experiment_id", "treatment_arm"]
        look = look.with_columns(pl.lit(i).alias("chunk")).with_columns(
            pl.when(pl.col("information_fraction") >= 1).then(pl.col("as_of")).min().over(key).alias("reached"))
        adopt = pl.col("decision") == "adopt"
        parts.append(look.sort("as_of").group_by(key).agg(
            pl.col("family_size").max().alias("k"),
            pl.col("decision").is_in(["adopt", "reject"]).any().alias("decided"),
            (adopt & (pl.col("as_of") <= pl.col("reached"))).any().alias("adopted_by_plan"),
            pl.col("reached").is_not_null().any().alias("plan_reached"),
            (pl.col("n_control") + pl.col("n_treatment")).filter(adopt).min().cast(pl.Float64).alias("sessions"),
            pl.col("planned_n_per_arm").first().alias("planned_n_per_arm"),
            pl.col("variance_reduction").last().alias("variance_reduction"),
        ))
    return pl.concat(parts).with_columns(pl.col("sessions").fill_null(float("inf")))


def rate(x: np.ndarray) -> str:
    p = float(np.mean(x))
    return f"{p:.4f} (s.e. {np.sqrt(p * (1 - p) / len(x)):.4f}, n = {len(x):,})"


def median_reduction(plain: np.ndarray, cuped: np.ndarray, rng: np.random.Generator) -> tuple[float, ...]:
    """Both medians, ``1 - median(cuped) / median(plain)`` and the bootstrap s.e. of the reduction and of
    each median (the experiments resampled in pairs)."""
    est = 1 - np.median(cuped) / np.median(plain)
    draws = rng.integers(0, plain.size, size=(BOOTSTRAP, plain.size))
    boot = 1 - np.median(cuped[draws], axis=1) / np.median(plain[draws], axis=1)
    med_se = [float(np.std(np.median(a[draws], axis=1))) for a in (plain, cuped)]
    return float(np.median(plain)), float(np.median(cuped)), float(est), float(np.std(boot)), *med_se


WORLDS = [
    ("correlation 0.3", ReturningUsers(correlation=0.3)),
    ("correlation 0.5", ReturningUsers(correlation=0.5)),
    ("correlation 0.7", ReturningUsers(correlation=0.7)),
    ("correlation 0.5, additive effect", ReturningUsers(correlation=0.5, additive=True, ceiling=0.95)),
    ("correlation 0.5, 60% returning", ReturningUsers(correlation=0.5, returning_share=0.6)),
]
"""The worlds of sections 1 and 2: the treatment turns a share of each user's failures into
successes (``simulation.returning``), or adds the MDE to every user's rate (additive)."""


def paired(world: ReturningUsers, n_families: int, seed: int, units: float, nights: int) -> dict[bool, pl.DataFrame]:
    """The first arm's outcomes (better by the MDE) without and with CUPED, on the same units."""
    runs = {}
    for cuped in (False, True):
        design = FamilyDesign(effect=0.05, first_arm_only=True, units_per_arm_night=units, nights=nights,
                              returning=world, cuped=cuped)
        runs[cuped] = outcomes(design, n_families, seed).filter(pl.col("treatment_arm") == "t1").sort(
            "chunk", "experiment_id")
    return runs


def power_line(run: pl.DataFrame) -> str:
    return (f"{rate(run.get_column('adopted_by_plan').to_numpy())}; by arms "
            + " / ".join(f"{run.filter(pl.col('k') == k).get_column('adopted_by_plan').mean():.3f}" for k in (1, 2, 3, 4)))


def sessions_world(label: str, world: ReturningUsers, n_families: int, seed: int) -> None:
    """Section 1 for one world: sessions to a correct adopt, at 50 units an arm a night (a night's
    step is then about 2% of the median)."""
    runs = paired(world, n_families, seed, 50.0, 90)
    plain, cuped = runs[False], runs[True]
    m_p, m_c, red, se, se_p, se_c = median_reduction(plain.get_column("sessions").to_numpy(),
                                                     cuped.get_column("sessions").to_numpy(),
                                                     np.random.default_rng(seed))
    print(f"1. {label}: {cuped.height:,} comparisons, t1 better by the MDE, 50 units an arm a night, 90 nights")
    print(f"   variance reduction at the last night: mean {cuped.get_column('variance_reduction').mean():.4f}; "
          f"planned units per arm (control, mean): {plain.get_column('planned_n_per_arm').mean():,.0f} without, "
          f"{cuped.get_column('planned_n_per_arm').mean():,.0f} with CUPED")
    print(f"   median sessions to a correct adopt: {m_p:,.0f} (s.e. {se_p:,.0f}) without, {m_c:,.0f} (s.e. {se_c:,.0f}) "
          f"with CUPED: reduction {red:.4f} (s.e. {se:.4f})")
    print(f"   never adopted in 90 nights: {rate(np.isinf(plain.get_column('sessions').to_numpy()))} without, "
          f"{rate(np.isinf(cuped.get_column('sessions').to_numpy()))} with")
    print(f"   power at the plan without: {power_line(plain)}")
    print(f"   power at the plan with CUPED: {power_line(cuped)}", flush=True)


def power_world(label: str, world: ReturningUsers, n_families: int, seed: int) -> None:
    """Section 2 for one world."""
    runs = paired(world, n_families, seed, 160.0, 30)
    print(f"2. {label}: power at the plan, 160 units an arm a night, 30 nights  [target >= 0.80]")
    print(f"   without: {power_line(runs[False])}")
    print(f"   with CUPED: {power_line(runs[True])}", flush=True)


def aa_world(correlation: float, n_families: int, seed: int) -> None:
    """Section 2 for one world."""
    world = ReturningUsers(correlation=correlation)
    line = []
    for cuped in (False, True):
        design = FamilyDesign(units_per_arm_night=60.0, nights=30, returning=world, cuped=cuped)
        out = outcomes(design, n_families, seed)
        fam = out.group_by("chunk", "org_id").agg(pl.col("decided").any()).get_column("decided").to_numpy()
        exp = out.group_by("chunk", "experiment_id").agg(pl.col("decided").any()).get_column("decided").to_numpy()
        line.append(f"{'with CUPED' if cuped else 'without'}: families {rate(fam)}, experiments {rate(exp)}")
    print(f"3. A/A, correlation {correlation}, {n_families:,} families x 4 experiments, 30 nightly looks "
          f"[target: families <= 0.05]")
    for text in line:
        print(f"   {text}", flush=True)


def small_history(n_families: int, seed: int) -> None:
    """Section 4: the plug-in against the bound on histories of a few units."""
    print("4. the plan's reduction from a small history, correlation 0.5, t1 better by the MDE, 160 units an arm a "
          "night, 30 nights  [target >= 0.80]")
    for units in (40, 100, 400, 2000):
        world = ReturningUsers(correlation=0.5, history_units=units)
        design = FamilyDesign(effect=0.05, first_arm_only=True, units_per_arm_night=160.0, nights=30,
                              returning=world)
        for name, confidence in (("plug-in R^2", None), ("lower 90% bound", 0.9)):
            out = outcomes(design, n_families, seed, RegistrationPolicy(cuped_confidence=confidence)).filter(
                pl.col("treatment_arm") == "t1")
            print(f"   {units:>5} history units, {name:>15}: power at the plan {rate(out.get_column('adopted_by_plan').to_numpy())}; "
                  f"planned units per arm (mean) {out.get_column('planned_n_per_arm').mean():,.0f}", flush=True)


def main(n_families: int) -> None:
    for i, (label, world) in enumerate(WORLDS):
        sessions_world(label, world, n_families, seed=31 + i)
    for i, (label, world) in enumerate(WORLDS):
        power_world(label, world, n_families, seed=51 + i)
    for c in (0.3, 0.5, 0.7):
        aa_world(c, n_families, seed=41)
    small_history(n_families, seed=43)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--quick"]:
        main(200)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
