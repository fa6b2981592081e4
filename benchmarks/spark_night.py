"""Benchmark of one night on Apache Spark beside the same night on DuckDB, in one run.

Generates ``--sessions`` sessions over ``--days`` days and ``--experiments`` experiments as
Parquet landing files (the generator of ``benchmarks/nightly_run.py``), then runs the nightly
job over them twice, each in its own process and warehouse: ``duckdb`` (the embedded default)
and ``spark`` (``ZCL_ENGINE=spark``, ``--master``, default ``local[2]``), where verification
records, experience and the look's per-day sums are computed by Spark (``zcl_assets.engine``),
and so are staging's candidates (the landed files read and validated by the contracts, in
Spark's tasks). Prints, for each: the night's wall seconds, peak resident
memory of the Python process (Spark's JVM is a child process: its memory is not in it), the
seconds of the steps Spark computes, in part or whole (Dagster step durations), and for Spark the split of
its statements into mirroring the inputs as Parquet, running on Spark and handing the rows
back, and the seconds of staging's candidates on Spark; then whether both warehouses hold the
same rows in the staged tables of the facts, the quarantine, ``arm_day_sums``, ``experience``
and ``experiment_analysis`` (counts and an order-free digest of every value).

Run: ``python benchmarks/spark_night.py --sessions 200000`` (a few minutes on 2 cores);
``--sessions 10000000`` is the design's size. ``--new-day 33000`` then lands one more day and
runs a second night on both engines over the same warehouses: the nightly cadence, where
Spark's copies of the tables are rewritten only for the days that changed (the table-days
rewritten are printed).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(PROJECT / "benchmarks"))

SPARK_ASSETS = ("landing_and_staging", "verification_records", "experience", "experiment_analysis")
DIGESTED = ("staged_sessions", "staged_assignments", "staged_outcomes", "quarantine", "arm_day_sums", "experience",
            "experiment_analysis")
DROPPED = {"experiment_analysis": ("analysed_at",), "quarantine": ("quarantined_at",)}


class _Split(logging.Handler):
    """Adds up the mirror / spark / back seconds that ``SparkEngine`` logs per statement, and the
    seconds of staging's candidates computed by Spark's tasks (``staging``)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = {"mirror": 0.0, "spark": 0.0, "back": 0.0, "staging": 0.0}
        self.statements = 0
        self.days = [0, 0]  # days of the copied tables rewritten, of all their days

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno != logging.INFO:
            return
        if record.name.endswith(".mirror"):  # a table's copy: (table, days rewritten, days, days deleted)
            self.days[0] += record.args[1]
            self.days[1] += record.args[2]
            return
        if "files staged" in record.msg:  # staging's candidates: (table, files, seconds)
            self.seconds["staging"] += record.args[-1]
            return
        _, mirror, spark, back = record.args
        self.seconds["mirror"] += mirror
        self.seconds["spark"] += spark
        self.seconds["back"] += back
        self.statements += 1


def run_mode(engine: str, master: str, landing: Path, warehouse: Path, as_of: str) -> None:
    """Child process: one night on ``engine`` (the warehouse may hold earlier ones); prints JSON figures."""
    import dagster as dg

    os.environ.update(ZCL_LANDING_DIR=str(landing), ZCL_WAREHOUSE=str(warehouse), ZCL_ENGINE=engine,
                      ZCL_SPARK_MASTER=master)
    split = _Split()
    for name in ("zcl_assets.portability.spark_engine", "zcl_assets.portability.mirror"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.addHandler(split)
    from zcl_assets.runner import run_night

    start = time.perf_counter()
    with dg.DagsterInstance.ephemeral() as instance:
        results = run_night(instance, as_of, log_level="ERROR")
        assert results and all(r.success for r in results), "night failed"
        steps = {}
        for r in results:
            for event in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS):
                steps[event.step_key] = event.dagster_event.event_specific_data.duration_ms / 1000
    seconds = time.perf_counter() - start
    print(json.dumps({
        "seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "steps": {a: steps.get(a, 0.0) for a in SPARK_ASSETS}, "split": split.seconds, "statements": split.statements,
        "days": split.days,
        "digests": _digests(warehouse),
    }))


def _digests(warehouse: Path) -> dict:
    """Per table: rows and an order-free digest of every value (the sum of the rows' hashes)."""
    import duckdb

    out = {}
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for table in DIGESTED:
            columns = [c for c, *_ in con.execute(f"DESCRIBE {table}").fetchall() if c not in DROPPED.get(table, ())]
            listed = ", ".join(f'"{c}"' for c in columns)
            rows, digest = con.execute(f"SELECT count(*), CAST(sum(hash({listed})) AS VARCHAR) FROM "
                                       f"(SELECT {listed} FROM {table})").fetchone()
            out[table] = [rows, digest]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--experiments", type=int, default=20)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--new-day", type=int, default=0, metavar="SESSIONS",
                        help="then land one more day of SESSIONS sessions and run a second night on both engines")
    parser.add_argument("--as-of", default="2026-12-31", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=["generate", "duckdb", "spark"], help=argparse.SUPPRESS)
    parser.add_argument("--landing", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "generate":
        from nightly_run import generate

        generate(args.landing, args.sessions, args.days, args.experiments)
        return
    if args.mode:
        run_mode(args.mode, args.master, args.landing, args.warehouse, args.as_of)
        return
    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(tmp) / "landing"
        subprocess.run([sys.executable, __file__, "--mode", "generate", "--landing", str(landing), "--sessions",
                        str(args.sessions), "--days", str(args.days), "--experiments", str(args.experiments)], check=True)
        print(f"{args.sessions:,} sessions over {args.days} days, {args.experiments} experiments; Spark master {args.master}")
        same = _night(args, landing, Path(tmp), "2026-12-31", "first night")
        if args.new_day:
            from nightly_run import generate

            generate(landing, args.new_day, 1, args.experiments, seed=2, first_day=args.days, first_session=args.sessions,
                     register=False)
            print(f"then {args.new_day:,} sessions on one more day")
            same = _night(args, landing, Path(tmp), "2027-01-01", "night with the new day") and same
        if not same:
            sys.exit(1)


def _night(args, landing: Path, tmp: Path, as_of: str, title: str) -> bool:
    """One night on each engine, each in its own process and warehouse; prints the figures and
    returns whether both warehouses hold the same rows."""
    print(f"{title}:")
    figures = {}
    for engine in ("duckdb", "spark"):
        out = subprocess.run([sys.executable, __file__, "--mode", engine, "--master", args.master, "--landing", str(landing),
                              "--warehouse", str(tmp / engine / "warehouse.duckdb"), "--as-of", as_of],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{engine} failed:\n{out.stderr[-5000:]}")
        figures[engine] = f = json.loads(out.stdout.strip().splitlines()[-1])
        steps = ", ".join(f"{a} {s:.1f} s" for a, s in f["steps"].items())
        print(f"{engine:>7}: night {f['seconds']:7.1f} s   peak {f['peak_mib']:6.0f} MiB (Python)   {steps}")
    split, days = figures["spark"]["split"], figures["spark"]["days"]
    print(f"  spark statements: {figures['spark']['statements']}; mirror inputs to Parquet {split['mirror']:.1f} s "
          f"({days[0]} of {days[1]} table-days rewritten), on Spark {split['spark']:.1f} s, rows handed back "
          f"{split['back']:.1f} s; staging's candidates on Spark {split['staging']:.1f} s")
    duck_steps, spark_steps = (sum(figures[e]["steps"].values()) for e in ("duckdb", "spark"))
    print(f"night spark / duckdb = {figures['spark']['seconds'] / figures['duckdb']['seconds']:.2f}x; "
          f"the steps Spark computes: {spark_steps:.1f} s against {duck_steps:.1f} s = {spark_steps / duck_steps:.1f}x")
    same = figures["spark"]["digests"] == figures["duckdb"]["digests"]
    print(f"same rows on both engines ({', '.join(DIGESTED)}): "
          + ("yes" if same else f"NO: {figures['duckdb']['digests']} against {figures['spark']['digests']}"))
    return same


if __name__ == "__main__":
    main()
