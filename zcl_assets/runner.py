"""Run one night in-process on a Dagster instance, exactly as the schedule plans it.

Used by ``zcl run`` (persistent instance at ``DAGSTER_HOME``) and by the end-to-end tests
(ephemeral instance). Paths come from ``ZCL_LANDING_DIR`` / ``ZCL_WAREHOUSE`` or the defaults.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from zcl_assets.definitions import build_resources, defs
from zcl_assets.defs.nightly import plan_requests


def run_night(
    instance: dg.DagsterInstance, as_of: str, echo: Callable[[str], None] = lambda _: None, log_level: str = "INFO"
) -> list[dg.ExecuteInProcessResult]:
    """Ingest every changed landed day, then take the look ``as_of``; stop at the first failed run.

    ``log_level`` sets the console logger of each run (the full event log is in the instance).

    Returns the results of the runs made, in order (the last one failed if any did).
    """
    definitions = defs()
    resources = build_resources()
    results = []
    for table, path, rule, reason in resources["landing"].stray_files():
        echo(f"warning: landed file not read: {path} ({rule}: {reason})")
    for request in plan_requests(resources["landing"], resources["warehouse"], as_of):
        job = definitions.resolve_job_def(request.job_name)
        first = request.tags.get("dagster/asset_partition_range_start", "-")
        last = request.tags.get("dagster/asset_partition_range_end", "-")
        days = f"landed days {first}..{last}" if first != "-" else "no changed landed days"
        echo(f"run {request.job_name}: {days}" + (f", look as of {as_of}" if request.job_name == "nightly_job" else ""))
        result = job.execute_in_process(
            instance=instance,
            tags=dict(request.tags),
            run_config={**(request.run_config or {}), "loggers": {"console": {"config": {"log_level": log_level}}}},
            asset_selection=request.asset_selection,
            raise_on_error=False,
        )
        results.append(result)
        if not result.success:
            break
    return results
