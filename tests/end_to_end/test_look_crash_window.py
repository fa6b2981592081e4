"""A night that dies after the look's state took its changes but before the looks were written
(the window where 2 of 10 recoveries of `benchmarks/killed_runs.py --kills 50` diverged): the
next run writes every look those changes touch, and the warehouse equals the uninterrupted one."""

import dagster as dg

from tests.end_to_end import killed_nights as kn
from tests.warehouse_checks import BOOKKEEPING, every_table, run_one_night
from zcl_assets.analysis import look
from zcl_assets.runner import run_night


def _nights(root, landing, warehouse, die_on=None, monkeypatch=None):
    world = kn._world(root)
    with dg.DagsterInstance.ephemeral() as instance:
        for night in kn.NIGHTS:
            kn._land_until(world, landing, kn._previous_day(night))
            if night == die_on:
                def dies(*args, **kwargs):
                    raise RuntimeError("killed between the state's update and the looks' write")
                with monkeypatch.context() as mp:
                    mp.setattr(look, "nights_to_write", dies)
                    mp.setenv("ZCL_LANDING_DIR", str(landing))
                    mp.setenv("ZCL_WAREHOUSE", str(warehouse))
                    assert not run_night(instance, night)[-1].success
            run_one_night(landing, warehouse, night, instance)
    return every_table(warehouse, skip=tuple(BOOKKEEPING))


def test_a_night_that_dies_between_the_state_and_the_looks_loses_no_look(tmp_path, monkeypatch):
    uninterrupted = _nights(tmp_path, tmp_path / "a" / "landing", tmp_path / "a" / "warehouse.duckdb")
    recovered = _nights(tmp_path, tmp_path / "b" / "landing", tmp_path / "b" / "warehouse.duckdb",
                        die_on=kn.NIGHTS[-1], monkeypatch=monkeypatch)
    differ = sorted(t for t in set(uninterrupted) | set(recovered) if uninterrupted.get(t) != recovered.get(t))
    assert differ == []
    # the second night rewrites looks of the first (late data of its days), so the window matters here
    assert any(str(r[0]) == kn.NIGHTS[0] for r in recovered["main.experiment_analysis"])
