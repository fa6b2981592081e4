"""The ``zcl`` command: import data into the landing folder, run the night, print the report.

Landing folder and warehouse come from ``--landing-dir`` / ``--warehouse``, else the
environment (``ZCL_LANDING_DIR``, ``ZCL_WAREHOUSE``), else ``data/landing`` and
``data/warehouse.duckdb`` under the project root. ``zcl run`` records its runs in the Dagster
instance of its warehouse: ``DAGSTER_HOME`` when set, else the project's ``dagster_home/`` for
the default warehouse (``make dev`` shows them) and ``<warehouse name>_dagster_home/`` beside
any other (``zcl --warehouse FILE ui`` shows them); an instance serves one warehouse.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import sys
from pathlib import Path

import click

from zcl_assets.paths import bundled_dir, default_landing_dir, default_warehouse_path, project_root


def _today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


@click.group()
@click.option("--landing-dir", type=click.Path(file_okay=False), default=None, help="Landing folder [env ZCL_LANDING_DIR; default data/landing].")
@click.option("--warehouse", type=click.Path(dir_okay=False), default=None, help="DuckDB file [env ZCL_WAREHOUSE; default data/warehouse.duckdb].")
@click.pass_context
def main(ctx: click.Context, landing_dir: str | None, warehouse: str | None) -> None:
    """ZCL experience pipeline: verified experience tables and nightly experiment analysis."""
    # Explicit options win; they are exported so that Dagster resources resolve the same paths.
    if landing_dir:
        os.environ["ZCL_LANDING_DIR"] = str(Path(landing_dir).resolve())
    if warehouse:
        os.environ["ZCL_WAREHOUSE"] = str(Path(warehouse).resolve())
    ctx.obj = {"landing": default_landing_dir(), "warehouse": default_warehouse_path()}


@main.group(name="import")
def import_group() -> None:
    """Turn an external export into landing files (split by UTC day)."""


def _parse_map(pairs: tuple[str, ...]) -> dict[str, str] | None:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected ARM=VALUE, got {pair!r}")
        arm, value = pair.split("=", 1)
        out[arm] = value
    return out or None


@import_group.command("ab-export")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--experiment", "experiment_id", required=True, help="Experiment id to register the export under.")
@click.option("--arm", "arms", multiple=True, metavar="NAME", help="A declared arm (repeatable); default: the arms of --variant.")
@click.option("--variant", "variants", multiple=True, metavar="ARM=VALUE", help="Delivered value of an arm, e.g. control=old_page (repeatable).")
@click.option("--control-arm", default="control", show_default=True)
@click.option("--unit-column", default="user_id", show_default=True)
@click.option("--timestamp-column", default="timestamp", show_default=True)
@click.option("--assigned-column", default="group", show_default=True, help="Column of the assigned arm (the coin).")
@click.option("--delivered-column", default="landing_page", show_default=True,
              help="Column of the variant actually delivered ('' if delivery equals assignment).")
@click.option("--outcome-column", default="converted", show_default=True, help="Binary outcome column (0/1 or true/false).")
@click.option("--org", "org_id", default="default", show_default=True)
@click.option("--task-type", default="ab_export", show_default=True)
@click.option("--mde", type=float, default=0.01, show_default=True, help="Absolute minimum detectable effect.")
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option("--power", type=float, default=0.8, show_default=True)
@click.option("--baseline", "baseline_mean", type=float, default=0.5, show_default=True, help="Control rate; 0.5 is the conservative binary variance.")
@click.option("--min-samples", "min_samples_per_arm", type=int, default=100, show_default=True)
@click.option("--unit", "randomization_unit", type=click.Choice(["user", "session"]), default="user", show_default=True)
@click.option("--sessions-per-unit", type=click.Choice(["one", "many"]), default="one", show_default=True, help="'one': a repeated unit is a defect.")
@click.pass_obj
def import_ab_export_command(obj, file, arms, variants, delivered_column, **options) -> None:
    """Import a unit-level A/B export FILE (CSV or Parquet) as one registered experiment."""
    from zcl_assets.importers.ab_export import AbExportOptions, import_ab_export

    try:
        settings = AbExportOptions(
            arms=tuple(arms), variant_map=_parse_map(variants) or {}, delivered_column=delivered_column or None, **options
        )
        summary = import_ab_export(file, obj["landing"], settings)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"landed {summary.rows_read:,} rows of {file} as experiment {settings.experiment_id} "
        f"(arms {', '.join(summary.arms)}; registered at {summary.registered_at}) in {len(summary.files_written)} files "
        f"under {obj['landing']}"
        + (f", {len(summary.files_removed)} files of an earlier import removed" if summary.files_removed else "")
    )
    repeated = (", and the rows of every unit seen more than once (the export promises one row per unit)"
                if settings.sessions_per_unit == "one" else "")
    click.echo(
        f"`zcl run` will quarantine the {summary.unparseable_rows:,} rows it cannot parse, and exclude from the analysis "
        f"(staged, kept out by the experience rules) the {summary.mismatched_rows:,} rows whose delivered variant differs "
        f"from the assignment{repeated}"
    )
    if summary.undeclared_labels:
        listed = ", ".join(f"{label!r} ({n:,} rows)" for label, n in summary.undeclared_labels.items())
        click.echo(f"warning: groups that are not declared arms, quarantined as arm_not_declared: {listed}", err=True)


@import_group.command("arm-snapshots")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--layout", type=click.Choice(["asos", "generic"]), default="asos", show_default=True)
@click.option("--start-date", default="2021-01-04", show_default=True, help="UTC date of time 0 (asos layout).")
@click.option("--org", "org_id", default="asos", show_default=True)
@click.option("--task-type", default="online_retail", show_default=True)
@click.option("--mde-relative", type=float, default=0.01, show_default=True, help="MDE as a share of the baseline.")
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option("--power", type=float, default=0.8, show_default=True)
@click.option("--min-samples", "min_samples_per_arm", type=int, default=1000, show_default=True)
@click.pass_obj
def import_arm_snapshots_command(obj, file, **options) -> None:
    """Import per-arm cumulative statistics over time (count, mean, variance) from FILE."""
    from zcl_assets.importers.arm_snapshots import import_arm_snapshots

    try:
        summary = import_arm_snapshots(file, obj["landing"], **options)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"landed {summary.rows_read} rows of {file}: {len(summary.experiment_ids)} experiments, "
        f"{sum(summary.records_written.values())} records in {len(summary.files_written)} files under {obj['landing']}"
    )


@import_group.command("postgres")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="Registration file (YAML) [env ZCL_POSTGRES_CONFIG; default <landing>/../sources/postgres.yaml].")
@click.option("--state-dir", type=click.Path(file_okay=False), default=None,
              help="Watermarks, fingerprints, change ledger [env ZCL_POSTGRES_STATE_DIR; default <landing>/../sources/postgres-<name>].")
@click.option("--incremental", is_flag=True,
              help="Fingerprint only the look-back window before the watermark, not every day (faster; see docs/postgres.md).")
@click.pass_obj
def import_postgres_command(obj, config_file: str | None, state_dir: str | None, incremental: bool) -> None:
    """Land the ZCL PostgreSQL database named by ZCL_POSTGRES_URI: changed days only, exactly once."""
    from resources.postgres import URI_VARIABLE, PostgresSource
    from zcl_assets.sources.report import render_sync

    uri = os.environ.get(URI_VARIABLE)
    if not uri:
        raise click.ClickException(f"set {URI_VARIABLE}=postgresql://reader:PASSWORD@host:5432/zcl (docs/postgres.md)")
    source = PostgresSource(uri=uri, config_file=config_file or "", state_dir=state_dir or "")
    try:
        summary = source.sync(str(obj["landing"]), reconcile=not incremental)
    except (ValueError, ConnectionError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(render_sync(summary, obj["landing"]))
    for experiment_id, reason in summary.refused.items():
        click.echo(f"warning: registration of experiment {experiment_id} refused: {reason}", err=True)


@import_group.command("admissions")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--org", "org_id", default="default", show_default=True, help="Organization of lines that name none.")
@click.option("--task-type", default="exploration", show_default=True, help="Task type of lines that name none.")
@click.option("--time-field", default=None, help="Field of each line's time [default: the first of at, ts, timestamp, time].")
@click.pass_obj
def import_admissions_command(obj, file, **options) -> None:
    """Import an append-only admission ledger FILE (JSON Lines, one lifecycle event per line) as admission_events."""
    from zcl_assets.importers.admissions import import_admissions

    try:
        summary = import_admissions(file, obj["landing"], **options)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    states = ", ".join(f"{s} {n}" for s, n in summary.states.items())
    click.echo(f"landed {summary.events:,} lifecycle events of {summary.admissions:,} admissions ({states}) from {file} "
               f"in {len(summary.files_written)} files under {obj['landing']}")
    if summary.unreadable_lines:
        click.echo(f"warning: {summary.unreadable_lines} lines are not JSON objects; landed verbatim, `zcl run` "
                   f"quarantines them as malformed_record", err=True)


@import_group.command("bundled")
@click.option("--seed", type=int, default=20261129, show_default=True, help="Seed of the simulated sessions.")
@click.pass_obj
def import_bundled_command(obj, seed: int) -> None:
    """Land the bundled data: the ASOS experiments (CC BY 4.0) and simulated ZCL sessions."""
    from zcl_assets.importers.arm_snapshots import import_arm_snapshots
    from zcl_assets.simulation.experience_loop import land_experience_loop
    from zcl_assets.simulation.sessions import simulate_sessions

    asos = bundled_dir() / "asos_digital_experiments" / "asos_digital_experiments_dataset.csv"
    snapshots = import_arm_snapshots(asos, obj["landing"], start_date=BUNDLED_ASOS_START)
    simulated = simulate_sessions(obj["landing"], seed=seed, start=BUNDLED_SIMULATION_START)
    week, runs = land_experience_loop(obj["landing"], seed=seed, start=BUNDLED_SIMULATION_START)  # memory on/off runs
    records = sum(simulated.records_written.values()) + sum(runs.records_written.values()) + week.events
    click.echo(
        f"landed ASOS: {len(snapshots.experiment_ids)} experiments; simulated: {records:,} records in "
        f"{len(simulated.experiments) + len(runs.experiment_ids)} experiments ({len(simulated.experiments)} context "
        f"experiments, {len(runs.experiment_ids)} memory on/off runs) and {week.admissions} exploration admissions "
        f"-> {obj['landing']}"
    )


@main.command("simulate")
@click.option("--seed", type=int, default=20261201, show_default=True, help="Seed of the world (same seed, same files).")
@click.option("--start", default="2026-10-01", show_default=True, help="UTC day the experiments register.")
@click.option("--days", type=int, default=56, show_default=True, help="Days of traffic after the registrations.")
@click.option("--traffic-scale", type=float, default=1.0, show_default=True, help="Multiplies every task type's traffic.")
@click.option("--truth", "truth_path", type=click.Path(dir_okay=False), default=None,
              help="Where the ground truth (JSON) goes [default: world-<seed>-truth.json beside the landing folder].")
@click.pass_obj
def simulate_command(obj, seed: int, start: str, days: int, traffic_scale: float, truth_path: str | None) -> None:
    """Land a simulated world with known truth: organizations of different sizes, returning users, session- and
    user-randomized experiments, true effects (zero too), a guardrail harm, SRM and drift incidents, a declared
    allocation change, self-reported outcomes and dirty rows. The truth (effects in each metric's estimand, and
    the decisions it warrants) is written as JSON beside the landing folder."""
    from zcl_assets.simulation.world import default_world, simulate_world

    try:
        dt.date.fromisoformat(start)
    except ValueError as exc:
        raise click.BadParameter(f"--start must be YYYY-MM-DD, got {start!r}") from exc
    world = simulate_world(obj["landing"], seed=seed, config=default_world(start, days, traffic_scale),
                           truth_path=truth_path or "default")
    last = (dt.date.fromisoformat(start) + dt.timedelta(days=days - 1)).isoformat()
    click.echo(f"landed {sum(world.records_written.values())} records of {len(world.truth)} experiments under "
               f"{obj['landing']}; truth: {world.truth_path}")
    for eid, t in world.truth.items():
        click.echo(f"  {eid:<24} {t['label'][:70]:<70} expected: {', '.join(t['expected_decisions'])}")
    click.echo(f"next: zcl run --as-of {last}")


# The bundled sources are laid next to each other in time, so one run covers them.
BUNDLED_ASOS_START = "2026-06-01"
BUNDLED_SIMULATION_START = "2026-09-01"


INSTANCE_MARK = "zcl_warehouse"
"""File in a Dagster instance folder naming the one warehouse whose runs it records (relative to the folder)."""


def _instance_home(warehouse: Path) -> Path:
    """The Dagster instance that records the runs on ``warehouse`` (exported as ``DAGSTER_HOME``):
    ``DAGSTER_HOME`` when set; else the project's ``dagster_home/`` for the default warehouse (so
    ``make dev`` shows the runs of ``make run``) and ``<warehouse name>_dagster_home/`` beside any
    other warehouse. An instance serves one warehouse: a run on another is refused (``click.ClickException``),
    so the UI never shows one warehouse's reports under another's name."""
    warehouse = Path(warehouse).resolve()
    if os.environ.get("DAGSTER_HOME"):
        home = Path(os.environ["DAGSTER_HOME"]).resolve()
    elif warehouse == (project_root() / "data" / "warehouse.duckdb").resolve():
        home = project_root() / "dagster_home"
    else:
        home = warehouse.parent / f"{warehouse.stem}_dagster_home"
        home.mkdir(parents=True, exist_ok=True)
        if not (home / "dagster.yaml").exists():  # the project's instance config (the duckdb pool limit)
            shutil.copy(project_root() / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    home.mkdir(parents=True, exist_ok=True)
    held = _claim_instance(home, warehouse)
    if held != warehouse:
        raise click.ClickException(
            f"the Dagster instance {home} (DAGSTER_HOME) records the runs on the warehouse {held}, and this run is on "
            f"{warehouse}: one instance for two warehouses would show the reports of one under the name of the other. "
            f"Unset DAGSTER_HOME to use the instance of {warehouse.name} ({warehouse.parent / (warehouse.stem + '_dagster_home')}), "
            "or set DAGSTER_HOME to another folder"
        )
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _claim_instance(home: Path, warehouse: Path) -> Path:
    """The warehouse ``home`` serves: the one its mark names, or ``warehouse`` when it has none yet (the
    mark is created by a hard link, so of two first runs at once exactly one claims the instance)."""
    mark = home / INSTANCE_MARK
    if not mark.exists():
        draft = home / f".{INSTANCE_MARK}.{os.getpid()}"
        draft.write_text(os.path.relpath(warehouse, home) + "\n", encoding="utf-8")
        try:
            os.link(draft, mark)
        except FileExistsError:
            pass
        finally:
            draft.unlink(missing_ok=True)
    return (home / mark.read_text(encoding="utf-8").strip()).resolve()


def _look_day(as_of: str | None, option: str = "--as-of") -> str:
    """A valid UTC day that has begun (default today); ``click.BadParameter`` otherwise."""
    if as_of is None:
        return _today()
    try:
        day = dt.date.fromisoformat(as_of)
    except ValueError as exc:
        raise click.BadParameter(f"{as_of!r} is not a date of the form YYYY-MM-DD ({exc})", param_hint=option) from exc
    if day.isoformat() > _today():
        raise click.BadParameter(
            f"{as_of} has not begun yet (today is {_today()} UTC): a look covers days that have begun", param_hint=option
        )
    return day.isoformat()


@main.command("run")
@click.option("--as-of", default=None, help="UTC day of the look (YYYY-MM-DD) [default: today].")
@click.option("--engine", type=click.Choice(["duckdb", "spark"]), default=None,
              help="Engine of the night's SQL [default: ZCL_ENGINE, else duckdb].")
@click.option("--master", default=None,
              help="Spark master URL: local[2], spark://HOST:7077, yarn, k8s://URL or sc://HOST:15002 "
                   "[default: ZCL_SPARK_MASTER, else local[2]].")
@click.option("--spark-warehouse", default=None,
              help="Spark's warehouse location (Parquet tables) [default: ZCL_SPARK_WAREHOUSE, else beside the DuckDB file].")
@click.pass_obj
def run_command(obj, as_of: str | None, engine: str | None, master: str | None, spark_warehouse: str | None) -> None:
    """Load every landed file not yet loaded, then take the night's look, as the schedule does."""
    from zcl_assets.definitions import build_resources
    from zcl_assets.engine import ENGINE_VARIABLE, MASTER_VARIABLE, SPARK_WAREHOUSE_VARIABLE
    from zcl_assets.reports.landing import render_run_changes
    from zcl_assets.runner import open_instance, run_night

    as_of = _look_day(as_of)
    for variable, value in ((ENGINE_VARIABLE, engine), (MASTER_VARIABLE, master), (SPARK_WAREHOUSE_VARIABLE, spark_warehouse)):
        if value:
            os.environ[variable] = value  # the run's resources are bound from the environment
    try:
        build_resources()  # a wrong setting (ZCL_DUCKDB_MEMORY_LIMIT) is said before a run starts
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    home = _instance_home(obj["warehouse"])
    before = _landed_rows(obj["warehouse"])
    with open_instance(home) as instance:
        results = run_night(instance, as_of, echo=click.echo, log_level="WARNING")
    if results and not results[-1].success:
        click.echo(f"run {results[-1].run_id} failed; `zcl ui` (DAGSTER_HOME={home}) shows why", err=True)
        sys.exit(1)
    changes = render_run_changes(before, _landed_rows(obj["warehouse"]))
    if changes:
        click.echo(changes + "\n")
    _print_report(obj["warehouse"], as_of, as_json=False, after_run=True)
    _print_where(obj["warehouse"], as_of, home)


@main.command("plan")
@click.option("--org", "org_id", required=True, help="Organization of the experiment.")
@click.option("--task-type", required=True, help="Task type (with the organization, the family of alpha slots).")
@click.option("--metric", type=click.Choice(["success", "time_minutes", "tokens", "score"]), default="success",
              show_default=True, help="Primary metric.")
@click.option("--baseline", "baseline_mean", type=float, required=True, help="Control mean (success: a rate in (0, 1)).")
@click.option("--mde", type=float, required=True, help="Minimum detectable effect, absolute, positive.")
@click.option("--sd", "baseline_sd", type=float, default=None, help="Per-unit sd (required for a continuous metric).")
@click.option("--direction", type=click.Choice(["increase", "decrease"]), default="increase", show_default=True,
              help="Which direction of the metric is beneficial.")
@click.option("--arms", "treatment_arms", type=click.IntRange(1, 31), default=1, show_default=True,
              help="Treatment arms, each against control, equal shares.")
@click.option("--unit", "randomization_unit", type=click.Choice(["session", "user"]), default="session", show_default=True)
@click.option("--alpha", type=float, default=0.05, show_default=True)
@click.option("--power", type=float, default=0.8, show_default=True)
@click.option("--min-samples", "min_samples_per_arm", type=int, default=100, show_default=True)
@click.option("--verified-share", type=float, default=1.0, show_default=True, help="Expected share of verified outcomes.")
@click.option("--guardrails", type=click.IntRange(0, 10), default=0, show_default=True,
              help="Guardrails that will share the type II error of adopt.")
@click.option("--cuped/--no-cuped", default=True, show_default=True,
              help="Ask for CUPED, as a registration does by default: the plan counts on the variance reduction the "
                   "family's history supports (a lower bound of its rho^2), and says how much or why none.")
@click.option("--as-of", default=None, help="UTC day it would register, at its start (YYYY-MM-DD) [default: now]; "
              "the night's family_outlook of day D registers at the end of D, as --as-of D+1 does.")
@click.option("--days", type=click.FloatRange(min=0, max=36_500, min_open=True), default=None,
              help="Also say the smallest MDE whose plan is reached within this many days (at most 100 years).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_obj
def plan_command(obj, as_of: str | None, days: float | None, as_json: bool, **fields) -> None:
    """What an experiment would cost before it is registered: its alpha slot, planned units per arm and
    days to reach them at the family's traffic of the last 28 days (the same plan a registration gets)."""
    from resources import Warehouse
    from zcl_assets.analysis.planner import PlanRequest, answer, family_state, registration
    from zcl_assets.analysis.registration import RegistrationPolicy
    from zcl_assets.reports.plan import plan_text

    at = None if as_of is None else dt.datetime.combine(dt.date.fromisoformat(_look_day(as_of)), dt.time(), dt.UTC)
    request = PlanRequest(at=at, **fields)
    from contracts.validate import check_records

    refused = check_records("experiments", [_json_ready(registration(request).row(0, named=True))])[0]
    if refused:
        raise click.ClickException("the registration would be refused: " + "; ".join(reason for _, reason in refused))
    path = Path(obj["warehouse"])
    if path.exists():
        with Warehouse(path=str(path)).connect(read_only=True) as con:
            family = family_state(con, request, RegistrationPolicy())
    else:
        family = family_state(None, request, RegistrationPolicy())
    if days is not None and not math.isfinite(days):
        raise click.BadParameter(f"{days} is not a number of days", param_hint="--days")
    figures = answer(request, family, days)
    click.echo(json.dumps(_finite(figures), indent=2) if as_json else plan_text(figures))


def _finite(figures: dict) -> dict:
    """``figures`` with every number that is not finite (an unreachable plan's infinite sample or days)
    as null, so that the JSON is JSON."""
    def clean(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return {k: clean(v) for k, v in value.items()} if isinstance(value, dict) else value

    return clean(figures)


def _json_ready(row: dict) -> dict:
    """A registration row as a landing record (its JSON fields decoded, its time as ISO text)."""
    out = dict(row)
    for name in ("arms", "guardrails", "metric_caps"):
        out[name] = json.loads(out[name])
    out["registered_at"] = out["registered_at"].isoformat()
    out["schema_version"] = 1
    return out


def _print_where(warehouse: Path, as_of: str, home: Path) -> None:
    """Where the analyst goes next: the night's HTML report and the UI of this warehouse's instance."""
    from resources import Warehouse
    from zcl_assets.defs.reports.assets import report_path

    path = report_path(Warehouse(path=str(warehouse)), as_of)
    if path.exists():
        click.echo(f"\nthe night's HTML report: {path}")
    ui = "make dev" if home == (project_root() / "dagster_home").resolve() else f"zcl --warehouse {warehouse} ui"
    click.echo(f"the Dagster UI: {ui}, then http://localhost:3000 -> Catalog -> analysis_report (start there; "
               f"DAGSTER_HOME={home})")


def _landed_rows(warehouse: Path) -> dict:
    """Staged and quarantined rows per landing table now (none before the first run)."""
    from resources import Warehouse
    from zcl_assets.reports.landing import landed_rows

    if not Path(warehouse).exists():
        return {}
    with Warehouse(path=str(warehouse)).connect(read_only=True) as con:
        return landed_rows(con)


@main.command("ui")
@click.option("--port", type=int, default=3000, show_default=True, help="Port of the UI on localhost.")
@click.pass_obj
def ui_command(obj, port: int) -> None:
    """Open the Dagster UI on this warehouse's own instance (`make dev` does it for the default warehouse)."""
    home = _instance_home(obj["warehouse"])
    os.environ["ZCL_WAREHOUSE"], os.environ["ZCL_LANDING_DIR"] = str(obj["warehouse"]), str(obj["landing"])
    dagster = Path(sys.executable).parent / "dagster"
    click.echo(f"DAGSTER_HOME={home} ZCL_WAREHOUSE={obj['warehouse']}: http://localhost:{port}")
    os.execv(dagster, [str(dagster), "dev", "-w", str(project_root() / "workspace.yaml"), "-p", str(port)])


@main.command("check-spark")
@click.option("--as-of", default=None, help="The look whose aggregates are run (YYYY-MM-DD) [default: the latest look].")
@click.option("--master", default="local[2]", show_default=True, help="Spark master URL (local mode by default).")
@click.option("--workdir", type=click.Path(file_okay=False), default=None,
              help="Folder for the inputs as Parquet (a cluster's workers must read it) [default: a temporary folder].")
@click.pass_obj
def check_spark_command(obj, as_of: str | None, master: str, workdir: str | None) -> None:
    """Run the look's SQL aggregates on Apache Spark and on DuckDB over the warehouse and compare them row by
    row: the check to make before the same SQL runs on a cluster (needs pyspark and Java 17+). Exits 1 if
    any aggregate differs."""
    import tempfile

    from resources import Warehouse

    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise click.ClickException(f"pyspark is not installed ({exc}); `pip install pyspark` and a Java runtime") from exc
    from zcl_assets.portability.spark import RELATIVE_TOLERANCE, run_on_duckdb, run_on_spark, spark_session

    if as_of is not None:
        as_of = _look_day(as_of)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            # DuckDB's side first, then the warehouse is closed: a night may run while Spark works.
            try:
                with Warehouse(path=str(obj["warehouse"])).connect(read_only=True) as con:
                    if as_of is None:
                        analysed = con.execute(
                            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'experiment_analysis'").fetchone()[0]
                        as_of = con.execute("SELECT CAST(max(as_of) AS VARCHAR) FROM experiment_analysis").fetchone()[0] \
                            if analysed else None
                        if as_of is None:
                            raise click.ClickException(
                                f"{obj['warehouse']} holds no look yet: no experiment is registered, or `zcl run` has not run")
                    side = run_on_duckdb(con, as_of, workdir or scratch)
            except FileNotFoundError as exc:
                raise click.ClickException(str(exc)) from exc
            try:
                session = spark_session(master)
            except Exception as exc:  # noqa: BLE001 - Spark's start-up errors come from the JVM in many types
                raise click.ClickException(f"Spark did not start with --master {master}: {_first_line(exc)}") from exc
            try:
                results = run_on_spark(session, side)
            except Exception as exc:  # noqa: BLE001 - as above, a job that fails on the cluster
                raise click.ClickException(f"Spark could not run the aggregates on --master {master}: {_first_line(exc)}") from exc
            finally:
                session.stop()
    except OSError as exc:
        raise click.ClickException(f"the inputs could not be written for Spark: {exc}") from exc
    click.echo(f"the look's aggregates as of {as_of} on DuckDB and on Spark ({master}); doubles equal within "
               f"a relative {RELATIVE_TOLERANCE:g}")
    click.echo(f"{'aggregate':<28} {'DuckDB rows':>11} {'Spark rows':>10} {'differing':>9} {'max rel. diff.':>14}  verdict")
    for r in results:
        click.echo(f"{r.name:<28} {r.duckdb_rows:>11,} {r.spark_rows:>10,} {r.differing_rows:>9,} "
                   f"{r.max_relative_difference:>14.3g}  {r.verdict}")
    if not all(r.same for r in results):
        sys.exit(1)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


@main.command("report")
@click.option("--as-of", default=None, help="Show each experiment's latest look on or before this day (YYYY-MM-DD) [default: its latest].")
@click.option("--experiment", "experiments", multiple=True, metavar="ID", help="Only this experiment (repeatable); shows its details.")
@click.option("--org", "orgs", multiple=True, metavar="ID", help="Only this organization (repeatable).")
@click.option("--all-metrics", is_flag=True, help="Details also show metrics that are neither primary nor guardrail.")
@click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Also write one self-contained HTML page with every experiment and its plots to FILE.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON.")
@click.pass_obj
def report_command(obj, as_of: str | None, experiments: tuple[str, ...], orgs: tuple[str, ...], all_metrics: bool,
                   html_file: str | None, as_json: bool) -> None:
    """Each experiment's latest look, what needs attention first: decision, per-arm figures, the deciding
    confidence sequence beside the descriptive interval and test (each with its method), SRM, progress to
    the planned sample; at most 120 columns wide."""
    _print_report(obj["warehouse"], as_of, as_json, experiments=experiments, orgs=orgs, all_metrics=all_metrics,
                  html_file=html_file)


def _print_report(warehouse: Path, as_of: str | None, as_json: bool, after_run: bool = False,
                  experiments: tuple[str, ...] = (), orgs: tuple[str, ...] = (), all_metrics: bool = False,
                  html_file: str | None = None) -> None:
    from resources import Warehouse

    if as_of is not None:
        try:
            dt.date.fromisoformat(as_of)
        except ValueError as exc:
            raise click.BadParameter(f"{as_of!r} is not a date of the form YYYY-MM-DD ({exc})", param_hint="--as-of") from exc
    from zcl_assets.reports.experiments import load_views
    from zcl_assets.reports.funnel import funnel_text
    from zcl_assets.reports.summary import look_summary
    from zcl_assets.reports.text import fit, render_report

    registered = None
    try:
        with Warehouse(path=str(warehouse)).connect(read_only=True) as con:
            registered = con.execute("SELECT count(*) FROM staged_experiments").fetchone()[0] if after_run else None
            views = load_views(con, as_of, experiment_ids=experiments, org_ids=orgs)
            summary = look_summary(con, as_of) if as_json else None
            funnel = funnel_text(con, as_of) if not as_json and not (experiments or orgs) else ""
    except (FileNotFoundError, LookupError) as exc:
        if after_run and not registered:
            click.echo(f"no experiment is registered yet, so the look as of {as_of} has nothing to analyse")
            return
        raise click.ClickException(str(exc)) from exc
    if html_file:
        from zcl_assets.defs.reports.assets import plot_cache
        from zcl_assets.reports.html import plot_all, render_html

        # the night drew these plots already: reused unless the view changed since
        Path(html_file).write_text(render_html(views, plot_all(views, plot_cache(Warehouse(path=str(warehouse))))),
                                   encoding="utf-8")
        click.echo(f"wrote {html_file}: {len(views)} experiments with their plots", err=as_json)
    if as_json:
        keep = {v.experiment_id for v in views}
        summary["experiments"] = [e for e in summary["experiments"] if e["experiment_id"] in keep]
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        details = [v.experiment_id for v in views] if experiments else None
        click.echo(render_report(views, details=details, all_metrics=all_metrics))
        if funnel:
            click.echo("\n" + fit(funnel))


if __name__ == "__main__":  # pragma: no cover
    main()
