"""The nightly job, its schedule and the landing sensor.

The schedule, the sensor and ``zcl run`` plan the same way (:func:`plan_night`): the landing
days whose files changed since they were loaded (``zcl_assets.ingest.changes``) are loaded and
staged, with the tables whose cross-row rules read them, as ranges of the daily partitions
(``partitions.landing_days``): one run per run of consecutive partition keys, so exactly the
changed days are materialized; a day that lands for the first time is added as a partition
and materialized for every landing table, so no table shows a day with data as missing. The
last run of the night is ``nightly_job``, which then takes the night's look (the experience and
analysis assets); with nothing changed, no ingest runs and the derived tables with nothing to
read are left out (:func:`idle_assets`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import dagster as dg
import duckdb
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from contracts.evaluation import load_evaluation_contracts
from contracts.tables import CONTRACTS
from resources import LandingStore, Warehouse
from zcl_assets.defs.ingest.partitions import landing_days
from zcl_assets.ingest.changelog import CONSUMERS
from zcl_assets.ingest.changes import LOCK_WAIT_S, changed_tables, tables_to_stage
from zcl_assets.warehouse import DuckDBWarehouse, has_table

INGEST = dg.AssetSelection.groups("landing", "staging") - dg.AssetSelection.assets("landing_inventory")
ANALYSIS = dg.AssetSelection.groups("experience", "analysis", "funnel") | dg.AssetSelection.assets(
    "landing_inventory", "analysis_report"
)

nightly_job = dg.define_asset_job(
    "nightly_job",
    selection=INGEST | ANALYSIS,
    description="Load and stage the landed days that changed, then take the night's look at every experiment.",
)
ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=INGEST,
    description="Load and stage the landed days that changed (late files, corrections).",
)


def look_config(as_of: str) -> dict:
    """Run config that points the look at the UTC day ``as_of``."""
    return {"ops": {"experiment_analysis": {"config": {"as_of": as_of}}}}


class NightPlan(NamedTuple):
    """What a night runs: its requests in order, and the landing days to add as partitions first."""

    requests: list[dg.RunRequest]
    new_days: list[str]


def day_ranges(days: list[str], order: list[str]) -> list[list[str]]:
    """``days`` grouped into runs of consecutive keys of ``order`` (the partition keys in order).

    >>> day_ranges(["2026-01-03", "2026-01-01", "2026-01-02", "2026-01-09"], ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-05", "2026-01-09"])
    [['2026-01-01', '2026-01-02', '2026-01-03'], ['2026-01-09']]
    """
    position = {key: i for i, key in enumerate(order)}
    ranges: list[list[str]] = []
    for day in sorted(days, key=position.__getitem__):
        if ranges and position[day] == position[ranges[-1][-1]] + 1:
            ranges[-1].append(day)
        else:
            ranges.append([day])
    return ranges


def plan_night(landing: LandingStore, warehouse: Warehouse, as_of: str, instance: dg.DagsterInstance) -> NightPlan:
    """The runs of one night: each range of changed days is ingested, the last run then takes
    the look as of ``as_of``. ``instance``: where the landing days' partitions and the assets' last
    attempts are recorded."""
    changed = changed_tables(landing, warehouse.core)
    days = sorted({d for ds in changed.values() for d in ds})
    known_days = instance.get_dynamic_partitions(landing_days.name)
    known = set(known_days)
    new_days = [d for d in days if d not in known]
    ranges = day_ranges(days, list(known_days) + new_days)
    requests = []
    for i, group in enumerate(ranges):
        last = i == len(ranges) - 1
        touched = set(CONTRACTS) if set(group) & set(new_days) else {t for t, ds in changed.items() if set(ds) & set(group)}
        keys = [dg.AssetKey(f"raw_{t}") for t in CONTRACTS if t in touched]
        keys += [dg.AssetKey(f"staged_{t}") for t in tables_to_stage(touched)]
        requests.append(dg.RunRequest(
            job_name="nightly_job" if last else "ingest_job", run_key=f"night:{as_of}:{group[0]}..{group[-1]}",
            run_config=look_config(as_of) if last else {}, asset_selection=keys + (_analysis_keys() if last else []),
            tags={ASSET_PARTITION_RANGE_START_TAG: group[0], ASSET_PARTITION_RANGE_END_TAG: group[-1]},
        ))
    if not ranges:
        idle = idle_assets(warehouse.core, landing.stray_files(), unsettled_assets(instance, _analysis_keys()))
        requests.append(dg.RunRequest(job_name="nightly_job", run_key=f"night:{as_of}", run_config=look_config(as_of),
                                      asset_selection=[k for k in _analysis_keys() if k not in idle]))
    return NightPlan(requests, new_days)


def idle_assets(warehouse: DuckDBWarehouse, strays: list[tuple[str, str, str, str]] | None = None,
                unsettled: set[dg.AssetKey] = frozenset()) -> set[dg.AssetKey]:
    """The derived assets a night with nothing newly landed can leave out: those whose change-log
    consumer has nothing to read (its own build asks the same question, under the budgets the
    night's run uses: the packaged ones) and that read no asset that will run; and
    ``landing_inventory`` when ``strays`` (``LandingStore.stray_files`` now) are the files it
    recorded. None of them when one of its keys is in ``unsettled`` (:func:`unsettled_assets`).
    Empty when the warehouse cannot be read (then everything runs)."""
    if not Path(warehouse.path).exists():
        return set()
    pending = _pending_builds()
    try:
        reader = DuckDBWarehouse(path=warehouse.path, lock_timeout_s=LOCK_WAIT_S, memory_limit=warehouse.memory_limit)
        with reader.connect(read_only=True) as con:
            running: set[str] = set()
            for consumer, (names, has_work) in pending.items():
                if {dg.AssetKey(k) for k in names} & unsettled or has_work(con) or running & set(CONSUMERS[consumer]):
                    running.add(consumer)
            inventory = dg.AssetKey("landing_inventory")
            inventory_kept = inventory not in unsettled and strays is not None and _recorded_strays(con) == sorted(strays)
    except duckdb.Error:
        return set()
    idle = {dg.AssetKey(k) for consumer, (keys, _) in pending.items() if consumer not in running for k in keys}
    return idle | ({inventory} if inventory_kept else set())


def _pending_builds() -> dict[str, tuple[list[str], Callable[[duckdb.DuckDBPyConnection], bool]]]:
    """Each consumer the night may leave out: (its asset keys, whether its build would change anything),
    in build order. Not Experience Gain: its claims follow tonight's decisions, so it runs with every look."""
    from zcl_assets.defs.funnel.assets import funnel
    from zcl_assets.experience.build import experience_pending, verification_records_pending
    from zcl_assets.experience.days import experience_days_pending
    from zcl_assets.experience_gain.build import loop_health_pending
    from zcl_assets.funnel.budgets import load_budgets
    from zcl_assets.funnel.build import exploration_share_pending, funnel_pending

    contracts = load_evaluation_contracts()
    try:
        budgets = load_budgets()
    except (OSError, ValueError):  # the funnel's own step then says what is wrong with them
        budgets = None
    return {
        "verification_records": (["verification_records"], lambda con: verification_records_pending(con, contracts)),
        "experience": (["experience"], lambda con: experience_pending(con, contracts) or experience_days_pending(con)),
        "loop_health": (["loop_health"], loop_health_pending),
        "funnel": ([k.path[-1] for k in funnel.keys], lambda con: budgets is None or funnel_pending(con, budgets)),
        "exploration_share": (["exploration_share"], lambda con: budgets is None or exploration_share_pending(con, budgets)),
    }


def _recorded_strays(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, str]] | None:
    """The stray files ``landing_inventory`` recorded, as ``LandingStore.stray_files`` lists them (None without a quarantine table)."""
    if not has_table(con, "main.quarantine"):
        return None
    return sorted(con.execute("SELECT source_table, source_file, rule, reason FROM quarantine WHERE stage = 'landing'").fetchall())


def unsettled_assets(instance: dg.DagsterInstance, keys: list[dg.AssetKey]) -> set[dg.AssetKey]:
    """Of ``keys``, those whose latest planned materialization in ``instance`` did not happen (its step
    failed after its build was written, or its run was killed or still runs): a night runs them again
    even with nothing to read, so that their metadata and checks are recorded. An asset the instance
    never planned is settled (its tables say whether it has work)."""
    done = {r.asset_entry.asset_key: r.asset_entry.last_materialization_storage_id for r in instance.get_asset_records(keys)}
    unsettled = set()
    for key in keys:
        planned = instance.get_latest_planned_materialization_info(key)
        if planned is not None and planned.storage_id > (done.get(key) or 0):
            unsettled.add(key)
    return unsettled


def _analysis_keys() -> list[dg.AssetKey]:
    from zcl_assets.defs.analysis import assets
    from zcl_assets.defs.experience_gain.assets import experience_gain, loop_health
    from zcl_assets.defs.funnel.assets import exploration_share, funnel
    from zcl_assets.defs.ingest.assets import landing_inventory
    from zcl_assets.defs.reports.assets import analysis_report

    nightly = (landing_inventory, assets.verification_records, assets.experience, assets.experiment_plans,
               assets.experiment_analysis, assets.knowledge_records, assets.family_outlook,
               assets.segment_breakdowns, analysis_report)
    return [a.key for a in nightly] + [*funnel.keys, *experience_gain.keys, loop_health.key, exploration_share.key]


def add_days(instance: dg.DagsterInstance, days: list[str]) -> None:
    """Add ``days`` as partitions of the landing and staging assets (idempotent, also when two
    runs add the same days at once: a day another run added first is not added again)."""
    for _attempt in range(5):
        missing = [d for d in days if not instance.has_dynamic_partition(landing_days.name, d)]
        if not missing:
            return
        try:
            instance.add_dynamic_partitions(landing_days.name, missing)
            return
        except Exception:  # noqa: BLE001 - another run added one of them in between: look again
            continue
    raise RuntimeError(f"could not add the landing days {days} as partitions")


@dg.schedule(job=nightly_job, cron_schedule="0 2 * * *", execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.STOPPED)
def nightly_schedule(context: dg.ScheduleEvaluationContext, landing: LandingStore, warehouse: Warehouse):
    """At 02:00 UTC: load what landed, then look at every experiment as of the previous UTC day."""
    as_of = (context.scheduled_execution_time.astimezone(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()
    plan = plan_night(landing, warehouse, as_of, context.instance)
    add_days(context.instance, plan.new_days)
    return plan.requests


@dg.sensor(jobs=[ingest_job], minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.STOPPED)
def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingStore, warehouse: Warehouse):
    """Every 5 minutes: load and stage the landed days that changed (late files, corrections)."""
    plan = plan_night(landing, warehouse, "", context.instance)
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    requests = [dg.RunRequest(job_name="ingest_job", run_key=f"ingest:{stamp}:{r.run_key}",
                              asset_selection=[k for k in r.asset_selection if k.path[-1].split("_")[0] in ("raw", "staged")],
                              tags=r.tags)
                for r in plan.requests if r.tags]
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[landing_days.build_add_request(plan.new_days)] if plan.new_days else [],
    )
