"""Run one night in-process on a Dagster instance, exactly as the schedule plans it.

Used by ``zcl run`` (persistent instance at ``DAGSTER_HOME``) and by the end-to-end tests
(ephemeral instance). Paths come from ``ZCL_LANDING_DIR`` / ``ZCL_WAREHOUSE`` or the defaults.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from filelock import FileLock

from zcl_assets.definitions import build_resources, defs
from zcl_assets.defs.nightly import add_days, plan_night
from zcl_assets.warehouse import held_open, process_alive


def run_night(
    instance: dg.DagsterInstance, as_of: str, echo: Callable[[str], None] = lambda _: None, log_level: str = "INFO"
) -> list[dg.ExecuteInProcessResult]:
    """Ingest what changed, then take the look ``as_of``, in one run of ``nightly_job``.

    The runs hold the warehouse file open (``zcl_assets.warehouse.held_open``): their steps run
    in this process, one after the other. Between two steps it is let go when a run of another
    process holds or waits for a slot of the warehouse's pool (:func:`others_want_the_warehouse`).

    ``log_level`` sets the console logger of the run (the full event log is in the instance).

    Returns the results of the runs made, in order (the last one failed if any did).
    """
    for run_id in release_dead_runs(instance):
        echo(f"warning: run {run_id} of a process that is gone was marked failed and its pool slots freed")
    definitions = defs()
    resources = build_resources()
    for _table, path, rule, reason in resources["landing"].stray_files():
        echo(f"warning: landed file not read: {path} ({rule}: {reason})")
    plan = plan_night(resources["landing"], resources["warehouse"], as_of, instance)
    add_days(instance, plan.new_days)
    results = []
    with held_open(resources["warehouse"].path, others_waiting=others_want_the_warehouse(instance)):
        for request in plan.requests:
            job = definitions.resolve_job_def(request.job_name)
            ingesting = sorted({k.path[-1].split("_", 1)[1] for k in request.asset_selection or [] if k.path[-1].startswith("raw_")})
            what = f"loading {', '.join(ingesting)} for {_days_of(request)}" if ingesting else "no changed landed files"
            echo(f"run {request.job_name}: {what}, look as of {as_of}")
            result = job.execute_in_process(
                instance=instance,
                tags={**request.tags, **_owner_tags()},
                run_config={**(request.run_config or {}), "loggers": {"console": {"config": {"log_level": log_level}}}},
                asset_selection=request.asset_selection,
                raise_on_error=False,
            )
            results.append(result)
            if not result.success:
                break
    return results


WAREHOUSE_POOL = "duckdb"
"""The pool of the assets that write the warehouse (limit 1 in ``dagster_home/dagster.yaml``)."""


def others_want_the_warehouse(instance: dg.DagsterInstance) -> Callable[[], bool]:
    """Whether a run that is not of this process (its host and process tags, :func:`_owner_tags`)
    holds or waits for a slot of :data:`WAREHOUSE_POOL` in ``instance``: its step would open the
    warehouse next."""
    mine = _owner_tags()

    def wanted() -> bool:
        info = instance.event_log_storage.get_concurrency_info(WAREHOUSE_POOL)
        runs = {s.run_id for s in info.claimed_slots} | {s.run_id for s in info.pending_steps}
        if not runs:
            return False
        found = {r.run_id: r for r in instance.get_runs(filters=dg.RunsFilter(run_ids=sorted(runs)))}
        return any(run_id not in found or any(found[run_id].tags.get(k) != v for k, v in mine.items()) for run_id in runs)

    return wanted


def _days_of(request: dg.RunRequest) -> str:
    start, end = (request.tags.get(f"dagster/asset_partition_range_{e}") for e in ("start", "end"))
    return start if start == end else f"{start} to {end}"


@contextmanager
def open_instance(home: Path) -> Iterator[dg.DagsterInstance]:
    """The Dagster instance at ``home`` (``DAGSTER_HOME``), created safely by concurrent processes.

    Dagster creates its SQLite storages on first use; two processes doing so at once race
    on creating the same tables. A file lock (``filelock``) in ``home`` serialises creation
    and a first read of each storage, then the instance is used without the lock.
    """
    with FileLock(str(home / ".instance.lock"), timeout=300):
        instance = dg.DagsterInstance.get()
        try:
            instance.get_runs(limit=1)
            instance.get_run_records(limit=1)
            instance.all_instigator_state()
            instance.event_log_storage.get_concurrency_keys()
        except BaseException:
            instance.dispose()
            raise
    with instance:  # disposed on exit; its state storage is the one definitions load against meanwhile
        yield instance


HOST_TAG = "zcl/host"
PID_TAG = "zcl/pid"
_UNFINISHED = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED]


def _owner_tags() -> dict[str, str]:
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the unfinished in-process runs of this host whose process is gone; free their slots.

    A run killed hard (``kill -9``, a crash) never reports its end and keeps its slot of the
    ``duckdb`` pool, which would block every later run. In-process runs have no run monitor,
    so each ``zcl run`` first releases the runs its predecessors left behind.

    Returns:
        The ids of the runs released.
    """
    host = socket.gethostname()
    released = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_UNFINISHED, tags={HOST_TAG: host})):
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        instance.report_run_failed(run, message=f"process {pid} on {host} ended without finishing the run")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
    return released
