"""Benchmark of `zcl import ab-export` against reading and writing the same file with polars alone.

Generates an A/B export of ``--rows`` rows shaped like Udacity's ``ab_data.csv``
(``user_id,timestamp,group,landing_page,converted``, about 1.3% mismatched rows and a few
repeated users) over ``--days`` days, then measures, each in its own process so that peak
memory is its own:

- ``polars``: ``pl.read_csv`` of the file and ``write_parquet`` of it (the floor: one read,
  one write);
- ``floor``: polars alone writing what the import must write, with no check, no digest and
  no split by day: the file read once, its timestamps parsed, and the three landing tables
  (sessions, assignments, outcomes, with an id of experiment, unit and timestamp) written as
  one Parquet file each. The import cannot be faster than this;
- ``import``: ``import_ab_export`` into an empty landing folder (read, parse, stable ids,
  contract check of the registration, four tables written as Parquet split by day).

Prints wall seconds and peak resident memory of each and the ratio; the target is
import <= 2 x polars.

Run: ``python benchmarks/import_ab_export.py --rows 1000000``; ``--rows 10000000`` is the
design's size.
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


def generate(path: Path, rows: int, days: int, seed: int = 1) -> None:
    """Write an ab_data-shaped CSV export."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    users = rng.integers(100_000, 100_000 + int(rows * 0.99), rows)
    seconds = rng.integers(0, days * 86400, rows)
    stamps = np.datetime64("2017-01-02T00:00:00") + seconds.astype("timedelta64[s]")
    group = np.where(rng.random(rows) < 0.5, "control", "treatment")
    flip = rng.random(rows) < 0.013
    page = np.where((group == "treatment") ^ flip, "new_page", "old_page")
    pl.DataFrame({
        "user_id": users,
        "timestamp": pl.Series(stamps.astype("datetime64[us]")).dt.strftime("%Y-%m-%d %H:%M:%S%.6f"),
        "group": group,
        "landing_page": page,
        "converted": (rng.random(rows) < 0.12).astype(int),
    }).write_csv(path)


def run_mode(mode: str, source: Path, out: Path) -> None:
    """Child process: run one measured mode and print JSON {seconds, peak_mib}."""
    start = time.perf_counter()
    if mode == "polars":
        import polars as pl

        pl.read_csv(source).write_parquet(out / "copy.parquet")
    elif mode == "floor":
        import polars as pl

        rows = pl.read_csv(source).with_columns(
            pl.col("timestamp").str.to_datetime(time_unit="us", time_zone="UTC").alias("at"),
            pl.format("bench:{}:{}", "user_id", "timestamp").alias("session_id"),
        )
        delivered = pl.col("landing_page").replace({"old_page": "control", "new_page": "treatment"})
        tables = {
            "sessions": rows.select("session_id", pl.lit("default").alias("org_id"), pl.col("user_id").cast(pl.String),
                                    pl.lit("ab_export").alias("task_type"), pl.col("at").alias("started_at"),
                                    pl.lit("bench").alias("experiment_id"), delivered.alias("delivered_arm")),
            "assignments": rows.select("session_id", pl.lit("bench").alias("experiment_id"), pl.col("group").alias("arm"),
                                       pl.col("user_id").cast(pl.String).alias("unit_id"), pl.col("at").alias("assigned_at")),
            "outcomes": rows.select("session_id", (pl.col("converted") == 1).alias("success"), pl.col("at").alias("recorded_at"),
                                    pl.lit("ab-export").alias("evaluator_id"), pl.lit("1").alias("evaluator_version"),
                                    pl.lit("evaluator").alias("evaluator_kind")),
        }
        for table, frame in tables.items():
            frame.write_parquet(out / f"{table}.parquet", compression="lz4")
    else:
        from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export

        import_ab_export(source, out / "landing",
                         AbExportOptions(experiment_id="bench", variant_map={"control": "old_page", "treatment": "new_page"}))
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=23)
    parser.add_argument("--mode", choices=["generate", "polars", "floor", "import"], help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode == "generate":
        generate(args.source, args.rows, args.days)
        return
    if args.mode:
        run_mode(args.mode, args.source, args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "export.csv"
        t = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--mode", "generate", "--source", str(source), "--rows", str(args.rows),
                        "--days", str(args.days)], check=True)
        print(f"generated {args.rows:,} rows ({source.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f} s")
        figures = {}
        for mode in ("polars", "floor", "import"):
            out = Path(tmp) / mode
            out.mkdir()
            result = subprocess.run([sys.executable, __file__, "--mode", mode, "--source", str(source), "--out", str(out)],
                                    capture_output=True, text=True, check=True)
            figures[mode] = json.loads(result.stdout.strip().splitlines()[-1])
            print(f"{mode:>7}: {figures[mode]['seconds']:7.1f} s   peak {figures[mode]['peak_mib']:7.0f} MiB")
        ratio = figures["import"]["seconds"] / figures["polars"]["seconds"]
        floor = figures["floor"]["seconds"] / figures["polars"]["seconds"]
        print(f"floor / polars = {floor:.2f}x (the three tables alone{' exceed' if floor > 2 else ' are within'} the 2x target); "
              f"import / floor = {figures['import']['seconds'] / figures['floor']['seconds']:.2f}x")
        print(f"import / polars = {ratio:.2f}x; target <= 2x ({'met' if ratio <= 2 else 'not met'})")


if __name__ == "__main__":
    main()
