"""The PostgreSQL source runs before the night: at 01:30 UTC, reconciling, so the nightly
schedule (02:00 UTC) finds the source's state of the night landed."""

import dagster as dg

from zcl_assets.defs.sources.assets import postgres_landing

postgres_landing_job = dg.define_asset_job(
    "postgres_landing_job", selection=[postgres_landing],
    description="Land the ZCL PostgreSQL database (changed days only) before the night's load.",
)


@dg.schedule(job=postgres_landing_job, cron_schedule="30 1 * * *", execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.STOPPED)
def postgres_landing_schedule(context: dg.ScheduleEvaluationContext):
    """At 01:30 UTC, half an hour before `nightly_schedule`: land the source, every day reconciled."""
    day = context.scheduled_execution_time.date().isoformat()
    return dg.RunRequest(run_key=f"postgres:{day}",
                         run_config={"ops": {"postgres_landing": {"config": {"reconcile": True}}}})
