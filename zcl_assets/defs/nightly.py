"""The nightly job, its schedule and the landing sensor.

The schedule, the sensor and ``zcl run`` plan the same way (``zcl_assets.ingest.changes``):
the landing tables whose files changed since they were loaded are loaded and staged, with
the tables whose cross-row rules read them, in one run; ``nightly_job`` then takes the
night's look (the experience and analysis assets). With nothing changed, only the look runs.
"""

import datetime as dt

import dagster as dg

from resources import LandingStore, Warehouse
from zcl_assets.ingest.changes import changed_tables, tables_to_stage

INGEST = dg.AssetSelection.groups("landing", "staging") - dg.AssetSelection.assets("landing_inventory")
ANALYSIS = dg.AssetSelection.groups("experience", "analysis", "funnel") | dg.AssetSelection.assets(
    "landing_inventory", "analysis_report"
)

nightly_job = dg.define_asset_job(
    "nightly_job",
    selection=INGEST | ANALYSIS,
    description="Load and stage the landed files that changed, then take the night's look at every experiment.",
)
ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=INGEST,
    description="Load and stage the landed files that changed (late files, corrections).",
)


def look_config(as_of: str) -> dict:
    """Run config that points the look at the UTC day ``as_of``."""
    return {"ops": {"experiment_analysis": {"config": {"as_of": as_of}}}}


def ingest_keys(landing: LandingStore, warehouse: Warehouse) -> list[dg.AssetKey]:
    """Asset keys to materialize for what changed: raw and staged assets of changed tables,
    and the staged assets of the tables whose cross-row rules read them."""
    changed = changed_tables(landing, warehouse.path)
    keys = [dg.AssetKey(f"raw_{t}") for t in changed]
    keys += [dg.AssetKey(f"staged_{t}") for t in tables_to_stage(changed)]
    return keys


def plan_requests(landing: LandingStore, warehouse: Warehouse, as_of: str) -> list[dg.RunRequest]:
    """The run request of one night: what changed is ingested, then the look as of ``as_of``."""
    keys = ingest_keys(landing, warehouse) + _analysis_keys()
    return [dg.RunRequest(job_name="nightly_job", run_key=f"night:{as_of}", run_config=look_config(as_of), asset_selection=keys)]


def _analysis_keys() -> list[dg.AssetKey]:
    from zcl_assets.defs.analysis import assets
    from zcl_assets.defs.experience_gain.assets import experience_gain, loop_health
    from zcl_assets.defs.funnel.assets import exploration_share, funnel
    from zcl_assets.defs.ingest.assets import landing_inventory
    from zcl_assets.defs.reports.assets import analysis_report

    nightly = (landing_inventory, assets.verification_records, assets.experience, assets.experiment_plans,
               assets.experiment_analysis, assets.knowledge_records, analysis_report)
    return [a.key for a in nightly] + [*funnel.keys, *experience_gain.keys, loop_health.key, exploration_share.key]


@dg.schedule(job=nightly_job, cron_schedule="0 2 * * *", execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.STOPPED)
def nightly_schedule(context: dg.ScheduleEvaluationContext, landing: LandingStore, warehouse: Warehouse):
    """At 02:00 UTC: load what landed, then look at every experiment as of the previous UTC day."""
    as_of = (context.scheduled_execution_time.astimezone(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()
    return plan_requests(landing, warehouse, as_of)


@dg.sensor(jobs=[ingest_job], minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.STOPPED)
def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingStore, warehouse: Warehouse):
    """Every 5 minutes: load and stage the landed files that changed (late files, corrections)."""
    keys = ingest_keys(landing, warehouse)
    if keys:
        stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        yield dg.RunRequest(run_key=f"ingest:{stamp}", asset_selection=keys)
