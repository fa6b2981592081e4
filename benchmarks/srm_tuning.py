"""Operating characteristics of the sequential SRM test at its bounded tuning (DESIGN section 6).

For plans from 500 to 192,876 units (the plan of an A/B export imported at MDE 0.01): the
share of runs in which a true 52/48 split of a 50/50 design is caught within its first
10,000 units (30 nightly looks), at the production tuning (the plan within [3,000, 10,000]
units) and at the plan itself; and the false alarms of a true 50/50 split over 60 nightly
looks, to 20,000 and to 200,000 units. Targets: at least 0.70 and at most 0.01. Figures with
Monte Carlo standard errors.

Run: ``python benchmarks/srm_tuning.py [runs]`` (default 20,000 runs a cell; about a minute).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zcl_assets.simulation.allocation import alarm_rate  # noqa: E402
from zcl_assets.stats.srm import srm_tuning_units  # noqa: E402

PLANS = (500.0, 2_000.0, 7_678.0, 20_000.0, 192_876.0)


def cell(p: float, runs: int) -> str:
    return f"{p:.4f} (s.e. {np.sqrt(p * (1 - p) / runs):.4f})"


def main(runs: int) -> None:
    print(f"sequential SRM, alpha 0.01, {runs:,} runs a cell")
    print("planned total | tuned at | 52/48 caught by 10,000 units (30 looks) | at the plan itself | "
          "false alarms 60 looks to 20,000 | to 200,000")
    for i, plan in enumerate(PLANS):
        caught = alarm_rate(plan, 0.52, 10_000, 30, runs, seed=10 * i + 1)
        old = alarm_rate(plan, 0.52, 10_000, 30, runs, seed=10 * i + 2, bounded=False)
        fa20 = alarm_rate(plan, 0.50, 20_000, 60, runs, seed=10 * i + 3)
        fa200 = alarm_rate(plan, 0.50, 200_000, 60, runs, seed=10 * i + 4)
        print(f"{plan:>13,.0f} | {float(srm_tuning_units(plan)):>8,.0f} | {cell(caught, runs)} [>= 0.70] | "
              f"{cell(old, runs)} | {cell(fa20, runs)} [<= 0.01] | {cell(fa200, runs)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
