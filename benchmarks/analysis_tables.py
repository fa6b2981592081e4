"""The analysis tables of the bundled world, dumped and compared bit for bit.

A change that restructures the analysis without changing its statistics must leave every
row of ``experiment_analysis``, ``experiment_plans`` and ``knowledge_records`` as it was.
This script runs the bundled world as a user does (``zcl import bundled`` and ``zcl run``,
in child processes, on a temporary landing folder, warehouse and ``DAGSTER_HOME``), then
writes the three tables to Parquet; ``compare`` reads two such dumps and prints every
difference. The times of computation (``analysed_at``, ``planned_at``, ``recorded_at``) are
left out; floats are compared by their bits (NaN against NaN, -0.0 against 0.0 differ).

Run:
    python benchmarks/analysis_tables.py dump OUT_DIR [--project DIR] [--as-of 2026-12-01]
    python benchmarks/analysis_tables.py compare BEFORE_DIR AFTER_DIR

``--project`` runs the code of another checkout of the project (for example the commit
before a change, extracted with ``git archive``) with this interpreter.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

PROJECT = Path(__file__).resolve().parents[1]
TABLES = ("experiment_analysis", "experiment_plans", "knowledge_records")
COMPUTED_AT = ("analysed_at", "planned_at", "recorded_at")


def run_bundled(project: Path, root: Path, as_of: str) -> Path:
    """``zcl import bundled`` then ``zcl run --as-of`` of ``project``'s code into ``root``; the warehouse."""
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((project / "dagster_home" / "dagster.yaml").read_text())
    landing, warehouse = root / "landing", root / "warehouse.duckdb"
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(project), "ZCL_HOME": str(project)}
    paths = ["--landing-dir", str(landing), "--warehouse", str(warehouse)]
    for args in (["import", "bundled"], ["run", "--as-of", as_of]):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "zcl_assets.cli", *paths, *args], cwd=project, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"zcl {' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        print(f"zcl {' '.join(args)}: {time.perf_counter() - started:.0f} s")
    return warehouse


def dump(warehouse: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for table in TABLES:
            frame = con.execute(f"SELECT * FROM {table}").pl()
            frame.drop([c for c in COMPUTED_AT if c in frame.columns]).write_parquet(out / f"{table}.parquet")
            print(f"{table}: {frame.height} rows, {frame.width} columns")


def _bits(frame: pl.DataFrame) -> pl.DataFrame:
    """Float columns as their 64-bit patterns (nulls kept), so equality is bit equality."""
    columns = []
    for name, dtype in frame.schema.items():
        if dtype == pl.Float64:
            s = frame.get_column(name)
            raw = pl.Series(name, np.ascontiguousarray(s.fill_null(0.0).to_numpy(), dtype=np.float64).view(np.int64))
            columns.append(raw.zip_with(s.is_not_null(), pl.Series(name, [None] * s.len(), dtype=pl.Int64)))
    return frame.with_columns(columns)


def compare(before: Path, after: Path) -> int:
    """Print the differences of each table; the number of tables that differ."""
    differing = 0
    for table in TABLES:
        a, b = (pl.read_parquet(d / f"{table}.parquet") for d in (before, after))
        if a.schema != b.schema:
            print(f"{table}: schemas differ\n  {a.schema}\n  {b.schema}")
            differing += 1
            continue
        a, b = _bits(a), _bits(b)
        order = list(a.columns)
        a, b = a.sort(order, nulls_last=True), b.sort(order, nulls_last=True)
        if a.equals(b, null_equal=True):
            print(f"{table}: {a.height} rows, {a.width} columns, bit-identical")
            continue
        differing += 1
        only_a = a.join(b, on=order, how="anti", nulls_equal=True)
        only_b = b.join(a, on=order, how="anti", nulls_equal=True)
        print(f"{table}: {a.height} against {b.height} rows; {only_a.height} only before, {only_b.height} only after")
        for name, frame in (("before", only_a), ("after", only_b)):
            if frame.height:
                print(f"  first rows only {name}:\n{frame.head(3)}")
        if a.height == b.height:
            cols = [c for c in order if not a.get_column(c).equals(b.get_column(c), null_equal=True)]
            print(f"  columns that differ (rows sorted alike): {cols}")
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--project", type=Path, default=PROJECT)
    d.add_argument("--as-of", default="2026-12-01")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        with tempfile.TemporaryDirectory(prefix="zcl-analysis-tables-") as tmp:
            dump(run_bundled(args.project.resolve(), Path(tmp), args.as_of), args.out)
    else:
        sys.exit(1 if compare(args.before, args.after) else 0)


if __name__ == "__main__":
    main()
