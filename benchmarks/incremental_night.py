"""Benchmark of a night that follows what landed (DESIGN section 8, speed; a night costs what landed).

For each history size (``--sizes``, sessions over ``--days`` days and ``--experiments``
experiments, Parquet, written by ``benchmarks/nightly_run.py``'s generator), then one more
day of ``--new-day-sessions`` sessions, this measures in the same run, each in its own
process so that its peak memory is its own:

- ``backfill``: the history's first night (``zcl_assets.runner.run_night`` as of its last
  day), every day loaded in one run;
- ``floor``: ``nightly_run.py``'s ``FLOOR_SQL`` over the history (the least a script must do
  to keep the tables of DESIGN section 5), the yardstick of the backfill;
- ``night``: the next night, as of the new day, once the new day has landed, on the same
  warehouse and the same Dagster instance (a ``DAGSTER_HOME`` in the temporary folder with the
  project's ``dagster.yaml``, as ``zcl run`` uses: state the pipeline keeps in the instance,
  such as partitions, carries from one night to the next);
- ``new-day pass`` and ``31-day pass``: ``nightly_run.py``'s ``BASELINE_SQL`` (the stateless
  hand-written DuckDB script) over the new day's files alone and over every day;
- ``quiet``: one more night, as of the day after, with nothing newly landed;
- ``start-up``: importing the code location (Dagster itself, then the rest) and building
  its definitions, measured once;
- ``Dagster floor``: what Dagster alone costs a night of the same shape, in a fresh process
  on the same kind of instance (the project's ``dagster.yaml``): importing Dagster, opening
  the instance and one run of as many no-op asset steps as the night ran (the landing ones
  partitioned by day, all in the ``duckdb`` pool), each recording a materialization, the last
  also recording one page materialization per experiment (a partition of a dynamically
  partitioned asset, in the report's batches, as the report records each experiment's page); measured for the night and
  for the quiet night;
- ``new-day floor``: ``FLOOR_SQL`` over the new day's files alone, the least a script must
  do to keep the tables of DESIGN section 5 for that day. The night's floor is the sum of the
  two: no Dagster pipeline that keeps those tables can take less.

Every figure is wall seconds from the child's start (imports included) to the end of its work
(for a night, the end of ``run_night``: reading the run's checks, steps and warnings back from
the event log afterwards is the benchmark's own cost, about 4 s at 1,000 experiments) and its peak
resident memory by then (with that of its largest child process, if it started one). The targets
(issue "Nights that cost what landed"), checked at every size: night <= 2 x new-day pass +
10 s and < the 31-day pass; night at the largest size within 1.3x of the night at the
smallest; night peak < 1.5 GiB; backfill <= 1.5 x floor + 10 s with peak < 4 GiB; quiet
night < 5 s.

``--random-ids`` writes session ids in no order (as random UUIDs are) instead of in the order
of the sessions' starts (as time-ordered ids are): DuckDB's min-max indexes then skip no row
group when a night looks up the keys of the new day in the history's tables.

``--many-experiments [N]`` (default N = 1,000) measures the same for one history of N
experiments over 60 days (10 sessions per experiment and day unless ``--sizes`` says
otherwise) and a new day of 10 sessions per experiment; the target is the night with the
new day, look and report included, under 30 s. The quiet night at 89 experiments (the
bundled data's count) is ``--experiments 89``.

Run: ``python benchmarks/incremental_night.py`` (1M, 3M and 10M: an hour or more);
``--sizes 100000 --new-day-sessions 10000`` checks the script in a few minutes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from benchmarks.nightly_run import BASELINE_SQL, FLOOR_SQL, START, generate  # noqa: E402

MIB_LIMIT_NIGHT, MIB_LIMIT_BACKFILL = 1.5 * 1024, 4 * 1024
QUIET_LIMIT_S, MANY_LIMIT_S = 5.0, 30.0


def _day(offset: int) -> str:
    """``START`` plus ``offset`` days, as ``YYYY-MM-DD``."""
    import datetime as dt

    return (dt.date.fromisoformat(START) + dt.timedelta(days=offset)).isoformat()


def _peak_mib() -> float:
    """The mode's peak resident memory plus its largest child's (a night of many pages draws them in a
    child process beside it): an upper bound of what the two held at once."""
    own, children = (resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return (own + children) / 1024


def _script(script: str, landing: Path, database: Path) -> None:
    import duckdb

    con = duckdb.connect(str(database))
    try:
        for statement in script.format(l=landing, read="read_parquet", ext="parquet").split(";\n"):
            if statement.strip():
                con.execute(statement).fetchall()
    finally:
        con.close()


def _startup() -> dict:
    """Seconds to import Dagster, the rest of the code location, and to build its definitions."""
    t0 = time.perf_counter()
    import dagster  # noqa: F401

    t1 = time.perf_counter()
    from zcl_assets.definitions import defs

    t2 = time.perf_counter()
    defs().resolve_asset_graph()
    t3 = time.perf_counter()
    return {"import_dagster": t1 - t0, "import_rest": t2 - t1, "build": t3 - t2}


def _night(landing: Path, warehouse: Path, home: Path, as_of: str) -> dict:
    """One night through ``zcl_assets.runner.run_night`` on the instance at ``home``; its checks and slowest steps."""
    os.environ.update(ZCL_LANDING_DIR=str(landing), ZCL_WAREHOUSE=str(warehouse), DAGSTER_HOME=str(home))
    import dagster as dg

    from zcl_assets.runner import open_instance, run_night

    with open_instance(home) as instance:
        results = run_night(instance, as_of, log_level="ERROR")
        ran, peak = time.perf_counter(), _peak_mib()  # the night ends here: then this benchmark reads its event log
        if not results or not all(r.success for r in results):
            raise SystemExit(f"the night as of {as_of} failed")
        checks = [e.dagster_event.event_specific_data for r in results
                  for e in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)]
        steps = [(s.step_key, s.end_time - s.start_time) for r in results for s in instance.get_run_step_stats(r.run_id)
                 if s.end_time and s.start_time]
        warnings = [f"{e.step_key}: {e.user_message}" for r in results for e in instance.all_logs(r.run_id)
                    if e.level >= logging.WARNING and not e.is_dagster_event]
    return {"ran": ran, "peak": peak, "checks": len(checks), "failed_checks": sorted(c.check_name for c in checks if not c.passed),
            "steps": sorted(steps, key=lambda s: -s[1])[:6], "step_count": len(steps), "warnings": warnings}


def _dagster_floor(home: Path, steps: int, pages: int = 0) -> dict:
    """One run of ``steps`` no-op asset steps shaped like a night, the last recording ``pages``
    materializations of an experiment page as the report does, on the instance at ``home`` (created by a first run
    that is not measured): the seconds of importing Dagster, opening the instance and the
    measured run (``floor``)."""
    t0 = time.perf_counter()
    os.environ["DAGSTER_HOME"] = str(home)
    import dagster as dg

    imported = time.perf_counter() - t0
    from zcl_assets.defs.reports.assets import PAGES_PER_BATCH, log_batch  # how the report logs its pages

    days = dg.DynamicPartitionsDefinition(name="landing_day")
    experiments = dg.DynamicPartitionsDefinition(name="experiment")
    policy = dg.BackfillPolicy.single_run()

    @dg.asset(name="page", partitions_def=experiments)
    def page():
        return None

    def step(i: int, upstream: list) -> dg.AssetsDefinition:
        partitioned = i < 2  # the ingest steps are partitioned by day, like the night's
        @dg.asset(name=f"step_{i}", deps=upstream, pool="duckdb", partitions_def=days if partitioned else None,
                  backfill_policy=policy if partitioned else None)
        def noop(context):
            recorded = [dg.AssetMaterialization(asset_key="page", partition=f"e{e}", metadata={"rows": 0})
                        for e in range(pages if i == steps - 1 else 0)]
            for first in range(0, len(recorded), PAGES_PER_BATCH):  # the report's pages, in its batches
                log_batch(context, recorded[first:first + PAGES_PER_BATCH])
            return dg.MaterializeResult(metadata={"rows": 0})
        return noop

    assets: list[dg.AssetsDefinition] = []
    for i in range(steps):
        assets.append(step(i, [assets[-1].key] if assets else []))
    job = dg.Definitions(assets=[page, *assets], jobs=[dg.define_asset_job("night", selection=[a.key for a in assets])]
                         ).resolve_job_def("night")
    tags = {"dagster/asset_partition_range_start": "2026-01-01", "dagster/asset_partition_range_end": "2026-01-01"}
    t1 = time.perf_counter()
    with dg.DagsterInstance.get() as instance:
        opened = time.perf_counter() - t1
        instance.add_dynamic_partitions("landing_day", ["2026-01-01"])
        instance.add_dynamic_partitions("experiment", [f"e{e}" for e in range(pages)])
        job.execute_in_process(instance=instance, tags=tags)  # the instance's first run creates its storage
        start = time.perf_counter()
        job.execute_in_process(instance=instance, tags=tags)
        run = time.perf_counter() - start
    return {"floor": imported + opened + run, "run": run}


def run_mode(args: argparse.Namespace) -> None:
    """Child process: one measured mode; prints JSON {seconds, peak_mib, ...} as its last line."""
    start = time.perf_counter()
    extra: dict = {}
    if args.mode == "generate":
        generate(args.landing, args.sessions, args.days, args.experiments, seed=args.seed, first_day=args.first_day,
                 first_session=args.first_session, register=args.first_day == 0, random_ids=bool(args.random_ids))
    elif args.mode == "pass":
        _script(BASELINE_SQL, args.landing, args.warehouse)
    elif args.mode == "floor":
        _script(FLOOR_SQL, args.landing, args.warehouse)
    elif args.mode == "startup":
        extra = _startup()
    elif args.mode == "dagster-floor":
        extra = _dagster_floor(args.home, args.steps, args.pages)
    else:  # night
        extra = _night(args.landing, args.warehouse, args.home, args.as_of)
    end, peak = extra.pop("ran", time.perf_counter()), extra.pop("peak", _peak_mib())
    print(json.dumps({"seconds": end - start, "peak_mib": peak, **extra}))


def _child(mode: str, **options) -> dict:
    """Run one mode in a fresh interpreter (ru_maxrss survives fork and exec, so the parent stays small)."""
    command = [sys.executable, __file__, "--mode", mode]
    for name, value in options.items():
        command += [f"--{name.replace('_', '-')}", str(value)]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{mode} failed:\n{out.stderr[-5000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class History:
    sessions: int
    days: int
    experiments: int
    new_day_sessions: int
    random_ids: bool = False


def measure(history: History, root: Path) -> dict[str, dict]:
    """Every figure of one history, in the order that keeps each honest (see the module docstring)."""
    landing, new_day, home = root / "landing", root / "new_day", root / "dagster_home"
    home.mkdir(parents=True)
    shutil.copy(PROJECT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    t = time.perf_counter()
    ids = int(history.random_ids)
    _child("generate", landing=landing, sessions=history.sessions, days=history.days, experiments=history.experiments, seed=1,
           random_ids=ids)
    _child("generate", landing=new_day, sessions=history.new_day_sessions, days=1, experiments=history.experiments,
           seed=2, first_day=history.days, first_session=history.sessions, random_ids=ids)
    print(f"  generated {history.sessions:,} sessions over {history.days} days and {history.experiments} experiments, "
          f"and a new day of {history.new_day_sessions:,}, {'random' if ids else 'time-ordered'} session ids, "
          f"in {time.perf_counter() - t:.1f} s", flush=True)
    warehouse = root / "warehouse.duckdb"
    figures = {"floor": _child("floor", landing=landing, warehouse=root / "floor.duckdb")}
    (root / "floor.duckdb").unlink()
    figures["backfill"] = _child("night", landing=landing, warehouse=warehouse, home=home, as_of=_day(history.days - 1))
    shutil.copytree(new_day, landing, dirs_exist_ok=True)
    for mode, folder in (("new-day pass", new_day), ("all-days pass", landing)):
        figures[mode] = _child("pass", landing=folder, warehouse=root / "pass.duckdb")
        (root / "pass.duckdb").unlink()
    figures["night"] = _child("night", landing=landing, warehouse=warehouse, home=home, as_of=_day(history.days))
    figures["quiet"] = _child("night", landing=landing, warehouse=warehouse, home=home, as_of=_day(history.days + 1))
    figures["new-day floor"] = _child("floor", landing=new_day, warehouse=root / "floor.duckdb")
    (root / "floor.duckdb").unlink()
    for mode in ("night", "quiet"):
        floor_home = root / f"floor_home_{mode}"
        floor_home.mkdir()
        shutil.copy(PROJECT / "dagster_home" / "dagster.yaml", floor_home / "dagster.yaml")
        floor = _child("dagster-floor", home=floor_home, steps=figures[mode]["step_count"], pages=history.experiments)
        figures[f"Dagster floor, {mode}"] = {**floor, "seconds": floor["floor"]}
    for mode, f in figures.items():
        checks = f"   checks {f['checks'] - len(f['failed_checks'])}/{f['checks']} passed" if "checks" in f else ""
        checks += f"   {f['step_count']} steps" if "step_count" in f else ""
        failed = f" (failed: {', '.join(f['failed_checks'])})" if f.get("failed_checks") else ""
        print(f"  {mode:>13}: {f['seconds']:8.1f} s   peak {f['peak_mib']:7,.0f} MiB{checks}{failed}", flush=True)
    for mode in ("backfill", "night", "quiet"):
        slowest = ", ".join(f"{k} {s:.1f} s" for k, s in figures[mode]["steps"])
        print(f"  slowest steps, {mode}: {slowest}", flush=True)
        for warning in figures[mode]["warnings"]:  # a fallback (pages drawn here, staging in-process) shows here
            print(f"  warning, {mode}: {warning[:300]}", flush=True)
    return figures


def _label(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"


def _target(rows: list, what: str, size: int, figure: float, limit: float, unit: str = "s") -> None:
    shown = (lambda v: f"{v:,.0f} MiB") if unit == "MiB" else (lambda v: f"{v:.1f} s")
    rows.append((what, _label(size), shown(figure), shown(limit), "met" if figure <= limit else "NOT met"))


def night_targets(results: dict[int, dict[str, dict]], many: bool) -> list[tuple[str, ...]]:
    """(target, size, figure, limit, verdict) rows: the issue's targets at every size measured."""
    rows: list[tuple[str, ...]] = []
    for size, f in results.items():
        night, quiet, backfill = f["night"], f["quiet"], f["backfill"]
        if many:
            _target(rows, "night with the new day, look and report", size, night["seconds"], MANY_LIMIT_S)
        else:
            _target(rows, "night <= 2 x new-day pass + 10 s", size, night["seconds"], 2 * f["new-day pass"]["seconds"] + 10)
            _target(rows, "night < the pass over all days", size, night["seconds"], f["all-days pass"]["seconds"])
            _target(rows, "night peak < 1.5 GiB", size, night["peak_mib"], MIB_LIMIT_NIGHT, "MiB")
            _target(rows, "backfill <= 1.5 x floor + 10 s", size, backfill["seconds"], 1.5 * f["floor"]["seconds"] + 10)
            _target(rows, "backfill peak < 4 GiB", size, backfill["peak_mib"], MIB_LIMIT_BACKFILL, "MiB")
        _target(rows, "quiet night < 5 s", size, quiet["seconds"], QUIET_LIMIT_S)
        floor = f["Dagster floor, night"]["seconds"] + f["new-day floor"]["seconds"]
        rows.append(("  (floor of the night: Dagster's, its pages included, + the new day's tables)", _label(size),
                     f"{floor:.1f} s", "", ""))
        rows.append(("  (floor of the quiet night: Dagster's)", _label(size), f"{f['Dagster floor, quiet']['seconds']:.1f} s",
                     "", ""))
    if len(results) > 1 and not many:
        small, large = min(results), max(results)
        ratio = results[large]["night"]["seconds"] / results[small]["night"]["seconds"]
        rows.append((f"night flat: {_label(large)} within 1.3x of {_label(small)}", _label(large), f"{ratio:.2f}x",
                     "1.30x", "met" if ratio <= 1.3 else "NOT met"))
    return rows


def print_table(rows: list[tuple[str, ...]]) -> None:
    header = ("target", "size", "figure", "limit", "")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


def _histories(args: argparse.Namespace) -> tuple[list[History], bool]:
    random_ids = bool(args.random_ids)
    if args.many_experiments:
        n, days = args.many_experiments, 60
        sizes = args.sizes or [10 * n * days]
        return [History(s, days, n, args.new_day_sessions or 10 * n, random_ids) for s in sizes], True
    sizes = args.sizes or [1_000_000, 3_000_000, 10_000_000]
    return [History(s, args.days, args.experiments, args.new_day_sessions or 333_000, random_ids) for s in sizes], False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda text: [int(v) for v in text.split(",")], help="history sessions, comma-separated")
    parser.add_argument("--new-day-sessions", type=int, help="sessions of the new day (default 333,000)")
    parser.add_argument("--experiments", type=int, default=20)
    parser.add_argument("--days", type=int, default=30, help="days of history")
    parser.add_argument("--many-experiments", type=int, nargs="?", const=1000, help="N experiments, 60 days (default 1,000)")
    parser.add_argument("--random-ids", type=int, nargs="?", const=1, default=0,
                        help="session ids in no order, as random UUIDs are (default: in the order of the sessions' starts)")
    parser.add_argument("--workdir", type=Path, help="where the temporary landing and warehouses go (default: the system's)")
    for hidden in ("mode", "as-of"):
        parser.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    for hidden in ("landing", "warehouse", "home"):
        parser.add_argument(f"--{hidden}", type=Path, help=argparse.SUPPRESS)
    for hidden in ("sessions", "seed", "first-day", "first-session", "steps", "pages"):
        parser.add_argument(f"--{hidden}", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        run_mode(args)
        return
    histories, many = _histories(args)
    startup = _child("startup")
    print(f"start-up: {startup['seconds']:.1f} s (importing Dagster {startup['import_dagster']:.1f} s, the rest of the code "
          f"location {startup['import_rest']:.1f} s, building definitions {startup['build']:.1f} s), "
          f"peak {startup['peak_mib']:,.0f} MiB", flush=True)
    results = {}
    for history in histories:
        print(f"history of {_label(history.sessions)} sessions:", flush=True)
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            results[history.sessions] = measure(history, Path(tmp))
    print()
    print_table(night_targets(results, many))


if __name__ == "__main__":
    main()
