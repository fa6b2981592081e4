"""Benchmark of one night against a hand-written DuckDB script (DESIGN section 8, speed).

Generates ``--sessions`` sessions with their assignments and outcomes over ``--days`` days
and ``--experiments`` experiments as landing files (``--format parquet``, what the importers
write, or ``jsonl``), then measures, each in its own process so that peak memory is its own:

- ``pipeline``: ``zcl_assets.runner.run_night`` on an ephemeral Dagster instance: load,
  contract validation, staging, verification, experience, plans and the look;
- ``baseline``: one DuckDB script that reads the same files, joins sessions, assignments
  and outcomes and aggregates sufficient statistics per experiment and arm;
- ``floor``: the least a script must do to keep the tables the asset graph (DESIGN section 5)
  persists, with no validation, check, plan or look: ``staged_sessions``, ``staged_assignments``
  and ``staged_outcomes`` with their lineage, ``verification_records`` and ``experience`` as
  DuckDB tables, then the same aggregation as ``baseline``. The pipeline cannot be faster than
  this; where it exceeds the target, the target is below what the design asks to keep;
- ``startup``: importing the code location and building its definitions;
- ``quiet``: the next night on the pipeline's warehouse with nothing newly landed.

The pipeline and quiet lines also say how many of the run's asset checks passed (row
conservation among them: raw = staged + quarantined for every table).

Prints wall seconds and peak resident memory (MiB) of each, and the ratio pipeline /
baseline. The target is pipeline <= 2 x baseline + 15 s of start-up, under 4 GB, on 2 cores.

Run: ``python benchmarks/nightly_run.py --sessions 200000`` (about a minute);
``--sessions 10000000`` is the design's size.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

START = "2026-01-01"


def generate(
    landing: Path, sessions: int, days: int, experiments: int, seed: int = 1, fmt: str = "parquet",
    first_day: int = 0, first_session: int = 0, register: bool = True, random_ids: bool = False,
) -> None:
    """Write registrations, sessions, assignments and outcomes by UTC day (Parquet or JSON Lines).

    The sessions fall on the ``days`` days from ``first_day`` days after ``START`` and are
    numbered from ``first_session``; ``register=False`` writes no registrations (a later day
    of the same experiments, as ``benchmarks/incremental_night.py`` lands it).

    Session ids are ``s<number>`` (``s0``, ``s1``, ...), in the order of the sessions' starts, as
    time-ordered ids (ULIDs, UUIDv7) are; with ``random_ids`` they are 16 hex digits in no order,
    as random ids (UUIDv4) are: the number multiplied by an odd constant modulo 2**64 (a
    bijection, so ids stay unique across calls that number their sessions apart).
    """
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    t0 = np.datetime64(f"{START}T00:00:00") + np.timedelta64(first_day, "D")
    regs = []
    for e in range(experiments):
        regs.append({
            "schema_version": 1, "experiment_id": f"bench-{e}", "org_id": f"org-{e % 3}", "task_type": f"task-{e}",
            "kind": "order", "hypothesis": "benchmark", "control_arm": "control", "primary_metric": "success",
            "direction": "increase", "mde": 0.02, "alpha": 0.05, "power": 0.8, "baseline_mean": 0.5,
            "min_samples_per_arm": 100, "randomization_unit": "session", "registered_at": f"{START}T00:00:00+00:00",
            "arms": [{"name": "control", "payload": {}, "allocation": 0.5}, {"name": "treatment", "payload": {}, "allocation": 0.5}],
        })
    if register:
        folder = landing / "experiments" / START
        folder.mkdir(parents=True)
        (folder / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in regs))

    seconds = np.sort(rng.integers(60, days * 86400 - 3600, sessions))
    started = t0 + seconds.astype("timedelta64[s]")
    experiment = rng.integers(0, experiments, sessions)
    arm = np.where(rng.random(sessions) < 0.5, "control", "treatment")
    success = rng.random(sessions) < np.where(arm == "treatment", 0.52, 0.5)
    numbers = np.arange(first_session, first_session + sessions, dtype=np.uint64)
    if random_ids:
        ids = np.array([f"{n:016x}" for n in (numbers * np.uint64(0x9E3779B97F4A7C15)).tolist()])
    else:
        ids = np.char.add("s", numbers.astype(str))
    day = started.astype("datetime64[D]").astype(str)
    if fmt == "parquet":
        def iso(t):  # typed timestamps in Parquet
            return pl.Series(t.astype("datetime64[us]")).dt.replace_time_zone("UTC")
    else:
        def iso(t):
            return np.char.add(t.astype("datetime64[s]").astype(str), "+00:00")
    base = pl.DataFrame({"day": day, "session_id": ids, "experiment_id": np.char.add("bench-", experiment.astype(str)), "arm": arm})
    tables = {
        "sessions": base.with_columns(
            pl.lit(1).alias("schema_version"), pl.lit("org").alias("org_id"), pl.col("session_id").alias("user_id"),
            pl.lit("task").alias("task_type"), pl.Series("started_at", iso(started)),
            pl.Series("ended_at", iso(started + np.timedelta64(600, "s"))), pl.col("arm").alias("delivered_arm"),
        ).drop("arm"),
        "assignments": base.with_columns(
            pl.lit(1).alias("schema_version"), pl.col("session_id").alias("unit_id"), pl.Series("assigned_at", iso(started))
        ),
        "outcomes": base.select("day", "session_id").with_columns(
            pl.lit(1).alias("schema_version"), pl.Series("success", success), pl.Series("recorded_at", iso(started + np.timedelta64(900, "s"))),
            pl.lit("bench").alias("evaluator_id"), pl.lit("1").alias("evaluator_version"), pl.lit("evaluator").alias("evaluator_kind"),
        ),
    }
    for table, frame in tables.items():
        for (d,), part in frame.group_by(["day"]):
            out = landing / table / d
            out.mkdir(parents=True, exist_ok=True)
            if fmt == "parquet":
                part.drop("day").write_parquet(out / "bench.parquet")
            else:
                part.drop("day").write_ndjson(out / "bench.jsonl")


BASELINE_SQL = """
SET TimeZone = 'UTC';
CREATE TABLE s AS SELECT session_id, delivered_arm, experiment_id FROM {read}('{l}/sessions/*/*.{ext}');
CREATE TABLE a AS SELECT session_id, experiment_id, arm, unit_id, CAST(assigned_at AS TIMESTAMPTZ) AS assigned_at FROM {read}('{l}/assignments/*/*.{ext}');
CREATE TABLE o AS SELECT session_id, CAST(success AS DOUBLE) AS y, CAST(recorded_at AS TIMESTAMPTZ) AS recorded_at FROM {read}('{l}/outcomes/*/*.{ext}');
SELECT a.experiment_id, a.arm, count(*) AS n, sum(o.y) AS x, sum(o.y * o.y) AS x2
FROM a JOIN s USING (session_id) JOIN o USING (session_id)
WHERE s.delivered_arm = a.arm AND o.recorded_at >= a.assigned_at
GROUP BY ALL ORDER BY ALL;
"""
FLOOR_SQL = """
SET TimeZone = 'UTC';
SET preserve_insertion_order = false;
CREATE TABLE staged_sessions AS SELECT * EXCLUDE (filename), CAST(started_at AS DATE) AS partition_day,
  filename AS source_file, file_row_number AS source_row
  FROM {read}('{l}/sessions/*/*.{ext}', filename = true, file_row_number = true);
CREATE TABLE staged_assignments AS SELECT * EXCLUDE (filename), CAST(assigned_at AS DATE) AS partition_day,
  filename AS source_file, file_row_number AS source_row
  FROM {read}('{l}/assignments/*/*.{ext}', filename = true, file_row_number = true);
CREATE TABLE staged_outcomes AS SELECT * EXCLUDE (filename), CAST(recorded_at AS DATE) AS partition_day,
  filename AS source_file, file_row_number AS source_row
  FROM {read}('{l}/outcomes/*/*.{ext}', filename = true, file_row_number = true);
CREATE TABLE verification_records AS SELECT session_id, CAST(success AS DOUBLE) AS y, recorded_at, evaluator_id,
  evaluator_version, evaluator_kind = 'evaluator' AS authoritative, partition_day, source_file, source_row
  FROM staged_outcomes;
CREATE TABLE experience AS SELECT a.experiment_id, a.arm, a.unit_id, s.session_id, s.user_id, s.task_type,
  a.assigned_at, v.recorded_at, v.y, a.partition_day, a.source_file, a.source_row
  FROM staged_assignments a JOIN staged_sessions s USING (session_id) JOIN verification_records v USING (session_id)
  WHERE s.delivered_arm = a.arm AND v.recorded_at >= a.assigned_at AND v.authoritative;
SELECT experiment_id, arm, count(*) AS n, sum(y) AS x, sum(y * y) AS x2 FROM experience GROUP BY ALL ORDER BY ALL;
"""
READERS = {"parquet": ("read_parquet", "parquet"), "jsonl": ("read_ndjson", "jsonl")}


def run_mode(mode: str, landing: Path, warehouse: Path, fmt: str) -> None:
    """Child process: run one measured mode and print JSON {seconds, peak_mib}."""
    start = time.perf_counter()
    if mode in ("baseline", "floor"):
        import duckdb

        con = duckdb.connect(str(warehouse))
        read, ext = READERS[fmt]
        script = BASELINE_SQL if mode == "baseline" else FLOOR_SQL
        for statement in script.format(l=landing, read=read, ext=ext).split(";\n"):
            if statement.strip():
                con.execute(statement).fetchall()
        con.close()
    elif mode == "startup":
        from zcl_assets.definitions import defs

        defs().resolve_asset_graph()
    else:  # pipeline, quiet
        import os

        import dagster as dg

        os.environ["ZCL_LANDING_DIR"] = str(landing)
        os.environ["ZCL_WAREHOUSE"] = str(warehouse)
        from zcl_assets.runner import run_night

        # "quiet": the next night on the same warehouse, with nothing newly landed
        as_of = "2027-01-01" if mode == "quiet" else "2026-12-31"
        with dg.DagsterInstance.ephemeral() as instance:
            results = run_night(instance, as_of, log_level="ERROR")
            assert results and all(r.success for r in results), "pipeline run failed"
            checks = [e.dagster_event.event_specific_data for r in results
                      for e in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)]
        failed = sorted(f"{c.check_name} ({c.severity.value})" for c in checks if not c.passed)
        extra = {"checks": len(checks), "failed_checks": failed}
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mib": peak_mib, **(extra if mode in ("pipeline", "quiet") else {})}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--experiments", type=int, default=20)
    parser.add_argument("--format", choices=list(READERS), default="parquet", help="landing file format")
    parser.add_argument("--mode", choices=["generate", "pipeline", "quiet", "baseline", "floor", "startup"], help=argparse.SUPPRESS)
    parser.add_argument("--landing", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "generate":
        generate(args.landing, args.sessions, args.days, args.experiments, fmt=args.format)
        return
    if args.mode:
        run_mode(args.mode, args.landing, args.warehouse, args.format)
        return
    with tempfile.TemporaryDirectory() as tmp:
        landing = Path(tmp) / "landing"
        t = time.perf_counter()
        # Every step runs in its own process: peak RSS (ru_maxrss) survives fork and exec,
        # so this parent must stay small for the children's figures to be their own.
        subprocess.run(
            [sys.executable, __file__, "--mode", "generate", "--landing", str(landing), "--sessions", str(args.sessions),
             "--days", str(args.days), "--experiments", str(args.experiments), "--format", args.format],
            check=True,
        )
        print(f"generated {args.sessions:,} sessions over {args.days} days in {time.perf_counter() - t:.1f} s")
        figures = {}
        for mode in ("startup", "baseline", "floor", "pipeline", "quiet"):
            warehouse = Path(tmp) / f"{'pipeline' if mode == 'quiet' else mode}.duckdb"
            out = subprocess.run(
                [sys.executable, __file__, "--mode", mode, "--landing", str(landing), "--warehouse", str(warehouse),
                 "--format", args.format],
                capture_output=True, text=True,
            )
            if out.returncode != 0:
                sys.exit(f"{mode} failed:\n{out.stderr[-5000:]}")
            figures[mode] = json.loads(out.stdout.strip().splitlines()[-1])
            checks = figures[mode].get("checks")
            verdict = "" if checks is None else f"   asset checks {checks - len(figures[mode]['failed_checks'])}/{checks} passed " \
                + (f"(failed: {', '.join(figures[mode]['failed_checks'])})" if figures[mode]["failed_checks"] else "")
            print(f"{mode:>9}: {figures[mode]['seconds']:8.1f} s   peak {figures[mode]['peak_mib']:7.0f} MiB{verdict}")
        pipe, base, start = (figures[m]["seconds"] for m in ("pipeline", "baseline", "startup"))
        print(f"pipeline / baseline = {pipe / base:.1f}x; target: pipeline <= 2 x baseline + 15 s = {2 * base + 15:.1f} s "
              f"({'met' if pipe <= 2 * base + 15 else 'not met'}); start-up {start:.1f} s")
        floor = figures["floor"]["seconds"]
        print(f"floor (persist the staged tables, verification_records and experience, then aggregate): {floor:.1f} s "
              f"= {floor / base:.1f}x baseline; the pipeline spends {pipe - floor:.1f} s beyond it "
              f"({'the floor alone exceeds' if floor > 2 * base + 15 else 'the floor is within'} the target)")
        quiet = figures["quiet"]["seconds"]
        print(f"next night with nothing newly landed: {quiet:.1f} s (target < 10 s: {'met' if quiet < 10 else 'not met'})")


if __name__ == "__main__":
    main()
