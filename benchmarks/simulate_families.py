"""Full-size simulations of the decision rule over families of concurrent experiments.

1. A/A: 10,000 families (organization and task type) of K = 4 concurrent experiments with
   one to four treatment arms, 30 and then 60 nightly looks, no true effect: the share of families (and
   of experiments, by number of arms) that ever reach adopt or reject. Target: at most
   alpha = 0.05 per family (each experiment has alpha / K).
2. Power: the same with every treatment arm better by the MDE and enough traffic to pass
   the planned sample within the 30 nights: the share of comparisons adopted by the night
   their planned sample is reached (the registered power is promised at the plan).
   Target: at least the registered power (0.8).
3. Power by alpha slots (``--power N``): K = 1, 2 and 4 concurrent experiments of one to four
   treatment arms (N experiments of each arm count), every plan with R calibrated at its
   comparison's alpha; the first treatment arm better by the MDE and (a) the other arms
   without effect, the case the plan is calibrated for, and (b) every arm better. Target:
   per-arm power in 0.80 to 0.83 in (a), at least 0.80 in (b).

Everything runs through the production path (registration, the look, Holm steps, the rule)
in chunks of 1,000 families. Figures with Monte Carlo standard errors.

Run: ``python benchmarks/simulate_families.py [families]`` (several minutes on 2 cores);
``python benchmarks/simulate_families.py --power 2000`` (about ten minutes).
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

CHUNK = 1000


def run(n_families: int, effect: float, units: float, seed: int, nights: int = 30, slots: int = 4,
        first_arm_only: bool = False) -> pl.DataFrame:
    """Per experiment: arms, ever decided, adopted comparisons."""
    parts = []
    design = FamilyDesign(per_family=slots, effect=effect, units_per_arm_night=units, nights=nights,
                          first_arm_only=first_arm_only)
    chunk = CHUNK * 4 // slots
    for i, start in enumerate(range(0, n_families, chunk)):
        m = min(chunk, n_families - start)
        inputs, _ = simulate_families(m, design, seed=seed * 1000 + i, policy=RegistrationPolicy(alpha_slots=slots))
        look = analyse(inputs).filter(pl.col("is_primary"))
        key = ["chunk", "org_id", "experiment_id", "treatment_arm"]
        look = look.with_columns(pl.lit(i).alias("chunk")).with_columns(
            pl.when(pl.col("information_fraction") >= 1).then(pl.col("as_of")).min().over(key).alias("reached"))
        parts.append(look.group_by(key).agg(
            pl.col("decision").is_in(["adopt", "reject"]).any().alias("decided"),
            ((pl.col("decision") == "adopt") & (pl.col("as_of") <= pl.col("reached"))).any().alias("adopted"),
            pl.col("family_size").max().alias("k"),
            pl.col("reached").is_not_null().any().alias("plan_reached"),
        ))
    return pl.concat(parts)


def rate(x: np.ndarray) -> str:
    p = float(np.mean(x))
    return f"{p:.4f} (s.e. {np.sqrt(p * (1 - p) / len(x)):.4f}, n = {len(x):,})"


def power_by_slots(per_arm_count: int) -> None:
    """Per-arm power at the plan for K = 1, 2, 4 and one to four treatment arms (section 3)."""
    print(f"3. power at the plan, 0.30 -> 0.35 (the MDE), 160 units an arm a night, 30 nights, "
          f"{per_arm_count:,} experiments of each arm count")
    print("   K  arms  comparison alpha  (a) t1 alone better      (b) every arm better")
    for slots in (1, 2, 4):
        n_families = per_arm_count * 4 // slots
        alone = run(n_families, 0.05, 160.0, seed=10 + slots, slots=slots, first_arm_only=True)
        every = run(n_families, 0.05, 160.0, seed=20 + slots, slots=slots)
        for k in (1, 2, 3, 4):
            a = alone.filter((pl.col("k") == k) & (pl.col("treatment_arm") == "t1")).get_column("adopted").to_numpy()
            b = every.filter(pl.col("k") == k).get_column("adopted").to_numpy()
            print(f"   {slots}  {k}     {0.05 / slots / k:.6f}          {rate(a)}   {rate(b)}", flush=True)


def main(n_families: int) -> None:
    for nights in (30, 60):
        aa = run(n_families, 0.0, 60.0, seed=1 if nights == 30 else 3, nights=nights)
        exp = aa.group_by("chunk", "org_id", "experiment_id", "k").agg(pl.col("decided").any())
        fam = exp.group_by("chunk", "org_id").agg(pl.col("decided").any())
        print(f"1. A/A, {n_families:,} families x 4 experiments, {nights} nightly looks, alpha 0.05, K = 4")
        print(f"   families with any adopt or reject: {rate(fam.get_column('decided').to_numpy())}  [target <= 0.05]")
        print(f"   experiments:                       {rate(exp.get_column('decided').to_numpy())}  [target <= 0.0125]")
        for k in (1, 2, 3, 4):
            sel = exp.filter(pl.col("k") == k).get_column("decided").to_numpy()
            print(f"     with {k} treatment arm(s):        {rate(sel)}")
    power = run(max(n_families // 5, 200), 0.05, 160.0, seed=2)
    print("\n2. every arm better by the MDE (0.30 -> 0.35), 160 units an arm a night, 30 nights")
    print(f"   plan reached by night 30: {rate(power.get_column('plan_reached').to_numpy())}")
    print(f"   adopted by the planned sample: {rate(power.get_column('adopted').to_numpy())}  [target >= 0.80]")
    for k in (1, 2, 3, 4):
        sel = power.filter(pl.col("k") == k).get_column("adopted").to_numpy()
        print(f"     with {k} treatment arm(s): {rate(sel)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--power"]:
        power_by_slots(int(sys.argv[2]) if len(sys.argv) > 2 else 2000)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
