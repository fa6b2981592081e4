"""The bundled ASOS data as a sequence of nightly looks, in one run and one vectorised pass.

Lands the 78 ASOS experiments (allocation unknown, each its own family), runs one night of
the pipeline as of the last day of the data, which writes every nightly look from each
experiment's start in the same pass, and prints:

* how many experiments (and experiment-variant comparisons) got each decision at their
  last look, with the reasons of the invalid ones;
* against it, a fixed-horizon test read at every look (the peeking the decision rule
  exists to prevent): how many comparisons ever had a descriptive p < 0.05, and at the
  last look;
* the wall time of the run and of the look alone.

Run: ``python benchmarks/asos_looks.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dagster as dg  # noqa: E402
import duckdb  # noqa: E402

START = "2026-06-01"
LAST = "2026-10-11"  # start + 131 days, the last snapshot of the data


def main() -> None:
    from zcl_assets.importers.arm_snapshots import import_arm_snapshots
    from zcl_assets.paths import bundled_dir

    with tempfile.TemporaryDirectory() as tmp:
        landing, warehouse = Path(tmp) / "landing", Path(tmp) / "warehouse.duckdb"
        os.environ["ZCL_LANDING_DIR"], os.environ["ZCL_WAREHOUSE"] = str(landing), str(warehouse)
        source = bundled_dir() / "asos_digital_experiments" / "asos_digital_experiments_dataset.csv"
        import_arm_snapshots(source, landing, start_date=START)
        from zcl_assets.runner import run_night

        t0 = time.perf_counter()
        with dg.DagsterInstance.ephemeral() as instance:
            results = run_night(instance, LAST, log_level="ERROR")
        run_s = time.perf_counter() - t0
        assert results and all(r.success for r in results), "the run failed"
        from zcl_assets.analysis.engine import analyse
        from zcl_assets.analysis.look import read_inputs

        with duckdb.connect(str(warehouse)) as con:
            con.execute("SET TimeZone = 'UTC'")
            inputs = read_inputs(con, LAST)
            t1 = time.perf_counter()
            look = analyse(inputs)
            look_s = time.perf_counter() - t1
        with duckdb.connect(str(warehouse), read_only=True) as con:
            report(con, run_s, look_s, look.height)


def report(con: duckdb.DuckDBPyConnection, run_s: float, look_s: float, rows: int) -> None:
    nights = con.execute("SELECT count(DISTINCT as_of) FROM experiment_analysis").fetchone()[0]
    print(f"one run as of {LAST}: {run_s:.1f} s; {nights} nightly looks written in one pass; "
          f"the look alone over every night: {look_s:.2f} s for {rows:,} rows")
    # the last look of each experiment with data (its last snapshot day)
    last = """
        WITH last_day AS (
            SELECT experiment_id, max(CAST("at" AS DATE)) AS day FROM staged_arm_snapshots GROUP BY ALL
        )
        SELECT a.* FROM experiment_analysis a JOIN last_day l ON a.experiment_id = l.experiment_id AND a.as_of = l.day
        WHERE a.is_primary
    """
    per_pair = con.execute(f"SELECT decision, count(*) FROM ({last}) GROUP BY ALL ORDER BY 2 DESC").fetchall()
    per_experiment = con.execute(f"""
        SELECT verdict, count(*) FROM (
            SELECT experiment_id,
                   CASE WHEN bool_or(decision = 'invalid') THEN 'invalid'
                        WHEN bool_or(decision = 'adopt') THEN 'adopt'
                        WHEN bool_or(decision = 'reject') THEN 'reject'
                        WHEN bool_and(decision = 'no_effect') THEN 'no_effect'
                        WHEN bool_or(decision = 'inconclusive') THEN 'inconclusive'
                        ELSE 'continue' END AS verdict
            FROM ({last}) GROUP BY ALL
        ) GROUP BY ALL ORDER BY 2 DESC""").fetchall()
    print("\nDecision at each experiment's last look (an experiment with several variants: invalid, else adopt "
          "if any variant adopts, else reject if any rejects, no_effect if all are no_effect):")
    for verdict, n in per_experiment:
        print(f"  {verdict:<13} {n:3d} experiments")
    print("Per experiment-variant comparison:")
    for verdict, n in per_pair:
        print(f"  {verdict:<13} {n:3d} comparisons")
    peek = con.execute("""
        SELECT count(DISTINCT experiment_id || treatment_arm) FILTER (WHERE p_value < 0.05),
               count(DISTINCT experiment_id || treatment_arm) FILTER (WHERE decision IN ('adopt', 'reject')),
               count(DISTINCT experiment_id || treatment_arm)
        FROM experiment_analysis WHERE is_primary
    """).fetchone()
    final_fixed = con.execute(f"SELECT count(*) FILTER (WHERE p_value < 0.05), count(*) FROM ({last})").fetchone()
    print(f"\nFixed-horizon score test read at every look: {peek[0]} of {peek[2]} comparisons had p < 0.05 at some "
          f"look; at the last look {final_fixed[0]} of {final_fixed[1]}.")
    print(f"Anytime-valid decision: {peek[1]} of {peek[2]} comparisons were adopt or reject at some look.")
    invalid = con.execute(f"SELECT experiment_id, treatment_arm, decision_reason FROM ({last}) "
                          "WHERE decision = 'invalid' ORDER BY 1, 2").fetchall()
    for eid, arm, why in invalid:
        print(f"  invalid {eid} {arm}: {why}")


if __name__ == "__main__":
    main()
