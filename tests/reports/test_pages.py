"""The night's pages drawn by a child process are the pages drawn in the night's own process, the night
draws pages itself while the child has sent nothing, and a child that cannot start or stops leaves its
pages to the night's process, with a warning."""

from __future__ import annotations

import io
import pickle
import queue
import shutil
import subprocess
import sys
from types import SimpleNamespace

import dagster as dg
import duckdb
import pytest

from zcl_assets.defs.reports import pages as report_pages
from zcl_assets.defs.reports.assets import analysis_report
from zcl_assets.defs.reports.pages import Page, PageRequest, page_source
from zcl_assets.reports.experiments import load_views

NEVER = 10**9


def _views(warehouse):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return load_views(con)


def _drawn(request: PageRequest, views, child_from: int) -> tuple[list, list[str]]:
    warnings = []
    with page_source(request, expected=len(views), child_from=child_from, warn=warnings.append) as pages:
        return list(pages(views)), warnings


def _fields(page) -> tuple:
    return page.experiment_id, page.metadata, page.drawn, page.row, page.error


def _refuse_to_draw_here(view, cache):
    raise AssertionError(f"the page of {view.experiment_id} was drawn in the night's process")


def test_pages_drawn_by_the_child_are_the_pages_drawn_here(looked, tmp_path, monkeypatch):
    views = _views(looked.warehouse)
    here, warned_here = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "here")), views, NEVER)
    # The child runs in its own interpreter, so it does not see this patch: every page must come from it.
    monkeypatch.setattr(report_pages, "DRAW_WHILE_WAITING", False)
    monkeypatch.setattr(report_pages, "draw_page", _refuse_to_draw_here)
    child, warned_child = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "child")), views, 1)
    assert warned_here == warned_child == []
    assert len(views) > 5 and [_fields(p) for p in child] == [_fields(p) for p in here]
    assert [p.experiment_id for p in child] == [v.experiment_id for v in views]
    assert sorted(f.name for f in (tmp_path / "child").iterdir()) == sorted(f.name for f in (tmp_path / "here").iterdir())


def test_the_child_runs_the_nights_code_and_nothing_it_prints_mixes_with_its_pages(looked, tmp_path, monkeypatch):
    views = _views(looked.warehouse)
    here, _ = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "here")), views, NEVER)
    # a site hook that prints to standard output at the child's start (as a progress bar could later), on
    # the import path as a Path (Python accepts it), and a broken copy of the code in the current folder
    hooks, elsewhere = tmp_path / "hooks", tmp_path / "elsewhere" / "zcl_assets"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text("print('Building font cache')\n")
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("raise ImportError('a stale copy in the current folder')\n")
    monkeypatch.setattr(sys, "path", [hooks, *sys.path])
    monkeypatch.chdir(elsewhere.parent)
    monkeypatch.setattr(report_pages, "DRAW_WHILE_WAITING", False)
    monkeypatch.setattr(report_pages, "draw_page", _refuse_to_draw_here)
    child, warnings = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "child")), views, 1)
    assert warnings == [] and [_fields(p) for p in child] == [_fields(p) for p in here]


def test_pages_are_the_same_whichever_process_draws_them_while_the_child_starts(looked, tmp_path):
    views = _views(looked.warehouse)
    here, _ = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "here")), views, NEVER)
    both, warnings = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "both")), views, 1)
    assert warnings == [] and [_fields(p) for p in both] == [_fields(p) for p in here]


def _page(experiment_id: str, by: str) -> Page:
    return Page(experiment_id, {"by": by}, None, None, None)


class _Unsent(queue.Queue):
    """The child's batches; waiting on an empty one fails instead of hanging."""

    def get(self, block=True, timeout=None):
        if block and self.empty():
            raise AssertionError("this process waited for the child instead of drawing the page itself")
        return super().get(block, timeout)


def test_this_process_draws_while_the_child_has_sent_nothing_and_takes_each_page_once(monkeypatch):
    views = [SimpleNamespace(experiment_id=f"e{i}") for i in range(7)]
    batches = _Unsent()

    def draw_here(view, cache):
        if view.experiment_id == "e1":  # the child's first two batches arrive while this process draws e1
            batches.put([_page("e0", "child"), _page("e1", "child")])
            batches.put([_page(f"e{i}", "child") for i in (2, 3, 4)])
        return _page(view.experiment_id, "here")

    monkeypatch.setattr(report_pages, "draw_page", draw_here)
    child = SimpleNamespace(batches=batches)
    pages = list(report_pages._pages(views, child, None, warn=pytest.fail))
    assert [(p.experiment_id, p.metadata["by"]) for p in pages] == [
        ("e0", "here"), ("e1", "here"), ("e2", "child"), ("e3", "child"), ("e4", "child"), ("e5", "here"), ("e6", "here")]


@pytest.mark.parametrize(("end", "why"), [
    (EOFError("Ran out of input"), "it sent no page of it"),  # it ended, having sent e0 only
    # it exited normally, but what it wrote was not pages: the error is named, not hidden
    (pickle.UnpicklingError("invalid load key, 'B'."), "it stopped: UnpicklingError: invalid load key, 'B'.; exit status 0"),
])
def test_a_child_that_ends_before_a_page_it_owes_is_named_and_this_process_draws_the_rest(monkeypatch, end, why):
    views = [SimpleNamespace(experiment_id=f"e{i}") for i in range(4)]
    batches = _Unsent()
    batches.put([_page("e0", "child")])
    batches.put(end)
    monkeypatch.setattr(report_pages, "draw_page", lambda view, cache: _page(view.experiment_id, "here"))
    process = subprocess.Popen(["true"], stderr=subprocess.DEVNULL)  # a child that exited normally
    process.wait()
    warnings = []
    child = SimpleNamespace(batches=batches, process=process, errors=io.BytesIO())
    pages = list(report_pages._pages(views, child, None, warn=warnings.append))
    assert [(p.experiment_id, p.metadata["by"]) for p in pages] == [
        ("e0", "child"), ("e1", "here"), ("e2", "here"), ("e3", "here")]
    assert warnings == [f"pages from e1 on are drawn in this process, not by the child ({why})"]


def test_a_child_that_stops_leaves_its_pages_to_this_process(looked, tmp_path, monkeypatch):
    monkeypatch.setattr(report_pages, "DRAW_WHILE_WAITING", False)  # so the night reaches the child's end
    views = _views(looked.warehouse)
    here, _ = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "here")), views, NEVER)
    missing = PageRequest(str(tmp_path / "no-such-warehouse.duckdb"), "1GB", None, str(tmp_path / "child"))
    pages, warnings = _drawn(missing, views, 1)
    assert [_fields(p) for p in pages] == [_fields(p) for p in here]
    (warning,) = warnings
    assert warning.startswith(f"pages from {views[0].experiment_id} on are drawn in this process, not by the child")
    assert "FileNotFoundError: warehouse" in warning and "does not exist yet" in warning


def test_a_child_that_cannot_start_leaves_its_pages_to_this_process_and_below_the_threshold_none_starts(
        looked, tmp_path, monkeypatch):
    views = _views(looked.warehouse)
    here, _ = _drawn(PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "here")), views, NEVER)

    def no_process(*args, **kwargs):
        raise PermissionError("no new process here")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    request = PageRequest(str(looked.warehouse), "1GB", None, str(tmp_path / "child"))
    pages, warnings = _drawn(request, views, len(views))
    assert [_fields(p) for p in pages] == [_fields(p) for p in here]
    assert warnings == ["pages are drawn in this process: the child that draws them could not start "
                        "(PermissionError: no new process here)"]
    assert _drawn(request, views, len(views) + 1)[1] == []  # below the threshold: no child, no warning


def _pages_recorded(warehouse, known: list[str]) -> dict[str, dict]:
    from resources import Warehouse

    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("experiment", known)  # the experiments of an earlier night
        result = dg.materialize([analysis_report], instance=instance, resources={"warehouse": Warehouse(path=str(warehouse))})
        assert result.success
        return {
            r.asset_materialization.partition: r.asset_materialization.metadata
            for r in instance.fetch_materializations(dg.AssetKey("experiment_report"), limit=1000).records
        }


def test_the_report_records_the_pages_the_child_draws_as_it_records_its_own(looked, tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(looked.warehouse, warehouse)
    known = [v.experiment_id for v in _views(warehouse)]
    reference = _pages_recorded(warehouse, known)  # drawn here: CHILD_FROM is far above this night's pages
    monkeypatch.setattr(report_pages, "CHILD_FROM", 1)
    monkeypatch.setattr(report_pages, "DRAW_WHILE_WAITING", False)
    monkeypatch.setattr(report_pages, "draw_page", _refuse_to_draw_here)
    shutil.rmtree(tmp_path / "reports" / "plots")  # drawn again, not read back from the first night's folder
    assert _pages_recorded(warehouse, known) == reference and sorted(reference) == sorted(known)


def _project_instance(folder):
    """The project's instance (``dagster_home/dagster.yaml``: its storage, which stores a batch in one transaction)."""
    from zcl_assets.paths import project_root

    folder.mkdir()
    shutil.copy(project_root() / "dagster_home" / "dagster.yaml", folder / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(folder))


def _stored_batches(monkeypatch) -> list[list[str]]:
    """The partitions of ``experiment_report`` in each batch the instance's storage stores, as it stores them."""
    from zcl_assets.instance_storage import SqliteEventLogStorage

    batches, store = [], SqliteEventLogStorage.store_event_batch

    def recording(self, events):
        pages = [e.get_dagster_event().partition for e in events
                 if e.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
                 and e.get_dagster_event().asset_key == dg.AssetKey("experiment_report")]
        if pages:
            batches.append(pages)
        return store(self, events)

    monkeypatch.setattr(SqliteEventLogStorage, "store_event_batch", recording)
    return batches


def test_the_report_stores_its_pages_in_batches_and_each_page_once(looked, tmp_path, monkeypatch):
    from resources import Warehouse
    from zcl_assets.defs.reports import assets as report_assets

    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(looked.warehouse, warehouse)
    known = [v.experiment_id for v in _views(warehouse)]
    reference = _pages_recorded(warehouse, known)  # one by one: Dagster's ephemeral instance keeps no batch
    monkeypatch.setattr(report_assets, "PAGES_PER_BATCH", 4)
    batches = _stored_batches(monkeypatch)
    with _project_instance(tmp_path / "home") as instance:
        instance.add_dynamic_partitions("experiment", known)
        assert dg.materialize([analysis_report], instance=instance,
                              resources={"warehouse": Warehouse(path=str(warehouse))}).success
        records = instance.fetch_materializations(dg.AssetKey("experiment_report"), limit=1000).records
        stored = {r.asset_materialization.partition: r.asset_materialization.metadata for r in records}
    # batches of 4 in the order of the index, the last one the rest (Dagster stores a batch of one
    # event as a single event, so the rest must be more than one page here)
    assert len(known) % 4 > 1
    assert [len(b) for b in batches] == [4] * (len(known) // 4) + [len(known) % 4]
    assert [p for b in batches for p in b] == [r.experiment_id for r in _views(warehouse)]
    assert sorted(r.asset_materialization.partition for r in records) == sorted(known)  # each page once
    assert stored == reference


def _failing_after_two_pages(looked, tmp_path, monkeypatch):
    """A copy of the looked warehouse, and a report whose page source yields two pages and then raises."""
    from contextlib import contextmanager

    from zcl_assets.defs.reports import assets as report_assets
    from zcl_assets.reports.plots import PlotCache

    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(looked.warehouse, warehouse)

    @contextmanager
    def two_pages_then_a_failure(request, expected, warn):
        def pages(views):
            for view in views[:2]:
                yield report_pages.draw_page(view, PlotCache(str(tmp_path / "plots")))
            raise RuntimeError("the page source broke")
        yield pages

    monkeypatch.setattr(report_assets, "page_source", two_pages_then_a_failure)
    return warehouse


def test_a_report_that_fails_after_some_pages_keeps_the_pages_it_received(looked, tmp_path, monkeypatch):
    from resources import Warehouse
    from zcl_assets.defs.reports import assets as report_assets

    warehouse = _failing_after_two_pages(looked, tmp_path, monkeypatch)
    monkeypatch.setattr(report_assets, "PAGES_PER_BATCH", 50)  # both pages wait in an unfinished batch
    batches = _stored_batches(monkeypatch)
    with _project_instance(tmp_path / "home") as instance:
        result = dg.materialize([analysis_report], instance=instance, raise_on_error=False,
                                resources={"warehouse": Warehouse(path=str(warehouse))})
        assert not result.success
        stored = [r.asset_materialization.partition
                  for r in instance.fetch_materializations(dg.AssetKey("experiment_report"), limit=1000).records]
    first_two = [v.experiment_id for v in _views(warehouse)[:2]]
    assert batches == [first_two] and sorted(stored) == sorted(first_two)


def test_a_storage_error_while_keeping_the_pages_does_not_hide_the_error_that_stopped_them(looked, tmp_path, monkeypatch):
    from resources import Warehouse
    from zcl_assets.instance_storage import SqliteEventLogStorage

    warehouse = _failing_after_two_pages(looked, tmp_path, monkeypatch)

    def page(event) -> bool:
        return (event.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION
                and event.get_dagster_event().asset_key == dg.AssetKey("experiment_report"))

    def full_disk(self, events):
        if any(page(e) for e in events):
            raise OSError("the disk is full")
        return store(self, events)

    def full_disk_one(self, event):  # Dagster's fallback when a batch fails: one event at a time
        if page(event):
            raise OSError("the disk is full")
        return store_one(self, event)

    store, store_one = SqliteEventLogStorage.store_event_batch, SqliteEventLogStorage.store_event
    monkeypatch.setattr(SqliteEventLogStorage, "store_event_batch", full_disk)
    monkeypatch.setattr(SqliteEventLogStorage, "store_event", full_disk_one)
    with _project_instance(tmp_path / "home") as instance:
        result = dg.materialize([analysis_report], instance=instance, raise_on_error=False,
                                resources={"warehouse": Warehouse(path=str(warehouse))})
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    cause = failure.step_failure_data.error.cause  # the step's error, under Dagster's "error while executing"
    assert (cause.cls_name, cause.message.strip()) == ("RuntimeError", "RuntimeError: the page source broke")
