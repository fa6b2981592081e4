"""The nightly job, its schedule and the landing sensor.

The schedule and ``zcl run`` plan the same way (``zcl_assets.ingest.changes``): landed days that
changed since they were loaded are grouped into blocks of consecutive days; every block but
the last is ingested in its own run, and the last block runs together with the night's
look (the analysis assets) in one run of ``nightly_job``.
"""

import datetime as dt

import dagster as dg

from resources import LandingStore, Warehouse
from zcl_assets.defs.ingest.partitions import landing_days
from zcl_assets.ingest.changes import changed_days, contiguous_blocks

INGEST = dg.AssetSelection.groups("landing", "staging") - dg.AssetSelection.assets("landing_inventory")
ANALYSIS = dg.AssetSelection.groups("experience", "analysis") | dg.AssetSelection.assets("landing_inventory", "analysis_report")
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"

nightly_job = dg.define_asset_job(
    "nightly_job",
    selection=INGEST | ANALYSIS,
    partitions_def=landing_days,
    description="Load and stage the landed days that changed, then take the night's look at every experiment.",
)
ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=INGEST,
    partitions_def=landing_days,
    description="Load and stage a range of landed days (backfills, late files).",
)


def look_config(as_of: str) -> dict:
    """Run config that points the look at the UTC day ``as_of``."""
    return {"ops": {"experiment_analysis": {"config": {"as_of": as_of}}}}


def plan_requests(landing: LandingStore, warehouse: Warehouse, as_of: str) -> list[dg.RunRequest]:
    """Run requests of one night: ingest-only runs for earlier blocks, then ingest + look."""
    blocks = contiguous_blocks(changed_days(landing, warehouse.path))
    requests = [
        dg.RunRequest(job_name="ingest_job", run_key=f"ingest:{first}:{last}:{as_of}", tags={RANGE_START: first, RANGE_END: last})
        for first, last in blocks[:-1]
    ]
    tags = {RANGE_START: blocks[-1][0], RANGE_END: blocks[-1][1]} if blocks else {}
    selection = None if blocks else ANALYSIS
    requests.append(
        dg.RunRequest(
            job_name="nightly_job",
            run_key=f"night:{as_of}",
            run_config=look_config(as_of),
            tags=tags,
            asset_selection=None if selection is None else list(_analysis_keys()),
        )
    )
    return requests


def _analysis_keys() -> list[dg.AssetKey]:
    from zcl_assets.defs.analysis import assets
    from zcl_assets.defs.ingest.assets import landing_inventory
    from zcl_assets.defs.reports.assets import analysis_report

    nightly = (landing_inventory, assets.verification_records, assets.experience, assets.experiment_plans, assets.experiment_analysis,
               analysis_report)
    return [a.key for a in nightly]


@dg.schedule(job=nightly_job, cron_schedule="0 2 * * *", execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.STOPPED)
def nightly_schedule(context: dg.ScheduleEvaluationContext, landing: LandingStore, warehouse: Warehouse):
    """At 02:00 UTC: load what landed, then look at every experiment as of the previous UTC day."""
    as_of = (context.scheduled_execution_time.astimezone(dt.timezone.utc).date() - dt.timedelta(days=1)).isoformat()
    return plan_requests(landing, warehouse, as_of)


@dg.sensor(jobs=[ingest_job], minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.STOPPED)
def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingStore, warehouse: Warehouse):
    """Every 5 minutes: ingest landed days that changed (late files, backfills), one run per block."""
    for first, last in contiguous_blocks(changed_days(landing, warehouse.path)):
        yield dg.RunRequest(run_key=f"ingest:{first}:{last}:{context.cursor or ''}", tags={RANGE_START: first, RANGE_END: last})
