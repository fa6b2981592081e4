"""SIGKILL robustness: kill `zcl run` at seeded random moments of a fresh load and of the
next night, then recover (DESIGN section 8, robustness: a killed run leaves the previous
tables intact, and the next run converges).

Each trial kills the first night of a fresh warehouse ``--kills-per-night`` times and then
the second night (one more day landed) as often, each at a moment drawn uniformly over that
night's uninterrupted run and each run starting from what the kill before it left, and then
runs each night to the end (``tests/end_to_end/killed_nights.py``). Prints the kills,
how many hit a run in progress, the corruptions (a warehouse that does not open or a table
that does not read after a kill) and the recoveries that converged to the uninterrupted
tables, to the last bit.

Run: ``python benchmarks/killed_runs.py --kills 50`` (5 trials of 5 kills a night, 10
recoveries; about 30 to 60 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from tests.end_to_end.killed_nights import kill_trials  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50, help="kills in all")
    parser.add_argument("--kills-per-night", type=int, default=5, help="kills of each night before it runs to the end")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="zcl-kills-") as tmp:
        trials = max(1, args.kills // (2 * args.kills_per_night))
        report = kill_trials(Path(tmp), trials=trials, kills_per_night=args.kills_per_night, seed=args.seed)
    print(f"kills: {report.kills} ({report.hit_a_run} after the run had started), moments (s): {report.moments}")
    print(f"corruptions: {len(report.corruptions)}" + "".join(f"\n  {c}" for c in report.corruptions))
    print(f"recoveries converged to the uninterrupted tables: {report.converged} of {report.recoveries}")
    print(f"wall time: {time.monotonic() - started:.0f} s")
    sys.exit(0 if not report.corruptions and report.converged == report.recoveries else 1)


if __name__ == "__main__":
    main()
