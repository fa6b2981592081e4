"""Full-size versions of the three decision simulations, printing rates with MC error.

1. A/A with 30 nightly looks: share of runs that ever reach adopt or reject (target <= alpha).
2. CS coverage of the true difference at all 30 looks at once (target >= 0.95), and
   fixed-horizon 95% Welch / Wald interval coverage at n = 400 per arm (target about 0.95).
3. Power: share of runs with a true effect equal to the MDE that reach adopt by N_plan
   (target >= registered power), with R calibrated at the alpha and power (`inflation_at`) and, for contrast, with R = 1.

The scenarios and simulation code are those of ``tests/simulation`` (the CI runs them at
3000 runs each); here every figure uses ``N_RUNS`` runs in chunks.

Run: ``python benchmarks/simulate_decisions.py [n_runs]`` (about 1 minute at 40 000).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.simulation.test_aa_false_positive import (  # noqa: E402
    AA_SCENARIOS,
    aa_false_positive_rate,
)
from tests.simulation.test_cs_coverage import (  # noqa: E402
    COVERAGE_SCENARIOS,
    cs_simultaneous_coverage,
    fixed_horizon_coverage,
)
from tests.simulation.test_power_at_plan import POWER_SCENARIOS, power_by_plan  # noqa: E402
from zcl_assets.stats.power import inflation_at  # noqa: E402

CHUNK = 10_000


def chunked(fn, n_runs, seed):
    """Average a rate over chunks with independent seeds; return (rate, s.e.)."""
    rates, sizes = [], []
    for i, start in enumerate(range(0, n_runs, CHUNK)):
        m = min(CHUNK, n_runs - start)
        rates.append(fn(m, seed * 1000 + i))
        sizes.append(m)
    rate = float(np.average(rates, weights=sizes))
    return rate, float(np.sqrt(rate * (1 - rate) / n_runs))


def main(n_runs: int) -> None:
    print(f"runs per figure: {n_runs}; R at alpha .05, power .80 = {float(inflation_at(0.05, 0.8)):.3f}\n")
    print("1. A/A, 30 nightly looks: P(ever adopt or reject)  [target <= alpha]")
    for sc in AA_SCENARIOS:
        rate, se = chunked(lambda m, s: aa_false_positive_rate(sc, m, s)[0], n_runs, 1)
        print(f"   {sc[0]:40s} alpha {sc[-1]:.3f}: {rate:.4f} (s.e. {se:.4f})")

    print("\n2. CS covers the true difference at all 30 looks  [target >= 0.95]")
    for sc in COVERAGE_SCENARIOS:
        rate, se = chunked(lambda m, s: cs_simultaneous_coverage(sc, m, s)[0], n_runs, 2)
        print(f"   {sc[0]:40s}: {rate:.4f} (s.e. {se:.4f})")
    welch = chunked(lambda m, s: fixed_horizon_coverage(400, m, s)[0], n_runs, 3)
    wald = chunked(lambda m, s: fixed_horizon_coverage(400, m, s)[1], n_runs, 3)
    print("   fixed-horizon 95% at n = 400/arm  [target about 0.95]:")
    print(f"     Welch t (normal, sd 5 vs 8): {welch[0]:.4f} (s.e. {welch[1]:.4f})")
    print(f"     Wald z (0.35 vs 0.30)     : {wald[0]:.4f} (s.e. {wald[1]:.4f})")

    print("\n3. true effect = MDE: P(adopt by N_plan)  [target >= registered power]")
    for sc in POWER_SCENARIOS:
        n_plan = power_by_plan(sc, 10, 0)[2]
        rate, se = chunked(lambda m, s: power_by_plan(sc, m, s)[0], n_runs, 4)
        print(f"   {sc[0]:48s} N_plan {n_plan:6.0f}: {rate:.4f} (s.e. {se:.4f})")
    sc = POWER_SCENARIOS[0]
    rate, se = chunked(lambda m, s: power_by_plan(sc, m, s, inflation=1.0)[0], n_runs, 5)
    print(f"   same as first, R = 1 (fixed-horizon n only): {rate:.4f} (s.e. {se:.4f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40_000)
