"""Benchmark: what storing one event costs on the project's Dagster instance and on Dagster's own storage.

A night records one materialization per experiment page (1,000 a night at 1,000 experiments).
Each round runs, in a fresh process per instance, one asset step that records ``--events``
page materializations (a partition each, three small metadata entries and, with
``--table-rows N``, a table of N rows of six columns as a page's interval tables are), after a first run
that creates the instance's storage, and prints the milliseconds per event (wall and CPU) of
the measured run:

- ``dagster``: Dagster's default SQLite storage in the instance folder (``storage: sqlite``);
- ``project``: the instance of ``dagster_home/dagster.yaml`` (``zcl_assets/instance_storage.py``:
  the same files, connections kept open).

The two alternate, ``--rounds`` times each, so that a change in the machine's speed falls on both.

Run: ``python benchmarks/instance_events.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
DAGSTER_OWN = "telemetry:\n  enabled: false\nstorage:\n  sqlite:\n    base_dir:\n      env: DAGSTER_HOME\n"


def measure(home: Path, events: int, table_rows: int = 0) -> dict:
    """Child process: the seconds of one run recording ``events`` page materializations on the instance at ``home``."""
    import os

    os.environ["DAGSTER_HOME"] = str(home)
    import dagster as dg

    pages = dg.DynamicPartitionsDefinition(name="experiment")

    @dg.asset(partitions_def=pages)
    def page():
        return None

    columns = ["metric", "arm", "n", "estimate", "low", "high"]
    schema = dg.TableSchema(columns=[dg.TableColumn(c, "string", description=f"the {c}") for c in columns])
    rows = [dg.TableRecord({c: f"{c} {r}" for c in columns}) for r in range(table_rows)]
    table = {"intervals": dg.MetadataValue.table(rows, schema=schema)} if table_rows else {}

    @dg.asset
    def report(context):
        for e in range(events):
            context.log_event(dg.AssetMaterialization(asset_key="page", partition=f"e{e}",
                                                      metadata={"decision": "continue", "look": e, "lift": 0.5, **table}))

    job = dg.Definitions(assets=[page, report], jobs=[dg.define_asset_job("night", selection=[report])]).resolve_job_def("night")
    quiet = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    with dg.DagsterInstance.get() as instance:
        instance.add_dynamic_partitions("experiment", [f"e{e}" for e in range(events)])
        job.execute_in_process(instance=instance, run_config=quiet)  # creates the storage: not measured
        wall, cpu = time.perf_counter(), time.process_time()
        job.execute_in_process(instance=instance, run_config=quiet)
        return {"wall_ms": 1000 * (time.perf_counter() - wall) / events, "cpu_ms": 1000 * (time.process_time() - cpu) / events,
                "storage": type(instance.event_log_storage).__module__}


def _round(kind: str, events: int, table_rows: int, workdir: Path) -> dict:
    home = Path(tempfile.mkdtemp(dir=workdir))
    config = DAGSTER_OWN if kind == "dagster" else (PROJECT / "dagster_home" / "dagster.yaml").read_text()
    (home / "dagster.yaml").write_text(config)
    out = subprocess.run([sys.executable, __file__, "--child", str(home), "--events", str(events),
                          "--table-rows", str(table_rows)],
                         capture_output=True, text=True, check=True, cwd=PROJECT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--table-rows", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.events, args.table_rows)))
        return
    with tempfile.TemporaryDirectory(dir=args.workdir) as workdir:
        results: dict[str, list[dict]] = {"dagster": [], "project": []}
        for _ in range(args.rounds):
            for kind in results:
                results[kind].append(_round(kind, args.events, args.table_rows, Path(workdir)))
    print(f"{args.events} events per run, table of {args.table_rows} rows, {args.rounds} rounds alternating")
    for kind, runs in results.items():
        walls = ", ".join(f"{r['wall_ms']:.2f}" for r in runs)
        print(f"{kind:8s} {runs[0]['storage']:55s} ms/event {walls} (median {statistics.median(r['wall_ms'] for r in runs):.2f}), "
              f"CPU median {statistics.median(r['cpu_ms'] for r in runs):.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(PROJECT))
    main()
