"""Time the funnel build (lifecycle replay, states, stage counts, yield, arm diversity) on a large ledger.

Usage: .venv/bin/python benchmarks/funnel_replay.py [ADMISSIONS]   (default 1,000,000)

Writes a staged ledger of ADMISSIONS admissions over 50 organizations and a year (about 3.5
events per admission, 1% of admissions with an impossible extra event) into a DuckDB file in
a temporary folder, then builds the funnel tables twice and prints the figures.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from resources.warehouse import Warehouse
from zcl_assets.funnel.budgets import load_budgets
from zcl_assets.funnel.build import build_funnel

GENERATE = """
INSERT INTO staged_admission_events
WITH a AS (
    SELECT i, 'adm-' || i AS admission_id, 'org-' || (i % 50) AS org_id, 't' || (i % 3) AS task_type,
           TIMESTAMPTZ '2026-01-01 00:00:00+00' + to_seconds((hash(i) % 31536000)::BIGINT) AS t0,
           'arm-' || (hash(i * 7) % 6) AS arm, (hash(i * 13) % 100)::INTEGER AS fate
    FROM range(?) r(i)
), e AS (
    SELECT admission_id, org_id, task_type, 'admitted' AS state, t0 AS "at", arm, NULL AS session_id, NULL AS outcome FROM a
    UNION ALL SELECT admission_id, org_id, task_type, 'consumed', t0 + INTERVAL 2 MINUTE, arm, NULL, NULL FROM a WHERE fate >= 15
    UNION ALL SELECT admission_id, org_id, task_type, 'blocked', t0 + INTERVAL 3 MINUTE, arm, NULL, NULL FROM a WHERE fate BETWEEN 15 AND 29
    UNION ALL SELECT admission_id, org_id, task_type, 'launched', t0 + INTERVAL 4 MINUTE, arm, 'ses-' || i, NULL FROM a WHERE fate >= 45
    UNION ALL SELECT admission_id, org_id, task_type, 'terminal', t0 + INTERVAL 50 MINUTE, arm, 'ses-' || i,
                     CASE WHEN fate >= 90 THEN 'productive' WHEN fate >= 60 THEN 'unproductive' ELSE 'failed' END
              FROM a WHERE fate >= 50
    UNION ALL SELECT admission_id, org_id, task_type, 'launched', t0 + INTERVAL 60 MINUTE, arm, 'ses-' || i, NULL FROM a WHERE fate = 99
)
SELECT CAST("at" AS DATE), 'bench.parquet', row_number() OVER (), 1, admission_id, org_id, task_type, state, "at", arm, session_id, outcome
FROM e
"""


def main(admissions: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        warehouse = Warehouse(path=str(Path(folder) / "bench.duckdb"))
        with warehouse.connect() as con:
            started = time.perf_counter()
            con.execute(GENERATE, [admissions])
            events = con.execute("SELECT count(*) FROM staged_admission_events").fetchone()[0]
            print(f"ledger: {admissions:,} admissions, {events:,} events, generated in {time.perf_counter() - started:.1f} s")
            budgets = load_budgets()
            for run in (1, 2):
                started = time.perf_counter()
                built = build_funnel(con, budgets)
                elapsed = time.perf_counter() - started
                print(f"build {run}: {elapsed:.1f} s ({events / elapsed:,.0f} events/s); admissions {built.admissions:,}, "
                      f"quarantined {built.quarantined_by_rule}")
            counts = con.execute("SELECT stage, sum(admissions) FROM funnel_stage_counts GROUP BY ALL ORDER BY ALL").fetchall()
            print("reached:", {s: int(n) for s, n in counts})


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
