"""The night's experiment pages, drawn beside the process that records them.

Each page is drawn (plots, metadata, index row) and then recorded as a materialization of
``experiment_report``. Recording costs Dagster about 17 ms of this process's CPU a page, and
drawing about 10 ms more, so a night of 1,000 experiments spent 27 s in one core while the
other idled. From :data:`CHILD_FROM` pages on, a child process
(``python -P -m zcl_assets.defs.reports.pages``) loads the same look's views from the warehouse,
read-only, and draws them while this process records the pages it has already received: the
two costs overlap instead of adding up. Until the child's first pages arrive (its imports and
its load of the views, about 3 s), this process draws the pages itself rather than wait
(:data:`DRAW_WHILE_WAITING`), and leaves the child's copies of them unread. Below :data:`CHILD_FROM`
the child's start-up would cost more than it saves, and the pages are drawn here.

The child is a plain ``python -P -m`` process that reads its request from standard input and
writes the pages, pickled in batches, to a pipe of its own (not standard output, where DuckDB's
progress bar or a site hook could write). It is not a ``multiprocessing``
spawn, which would import the host's ``__main__`` script again (a user's script that runs a
night at top level would run it twice). A page the child did not send (it failed, or the two
loads differ) is drawn here, so every page is recorded exactly once; the warning says why.
A page is the same whichever process draws it (tests/reports/test_pages.py).
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from zcl_assets.defs.reports.metadata import experiment_metadata, failed_metadata
from zcl_assets.reports.experiments import ExperimentView, load_views
from zcl_assets.reports.index import IndexRow, failed_row, index_row
from zcl_assets.reports.plots import PlotCache
from zcl_assets.reports.plots import plots as view_plots
from zcl_assets.warehouse import DuckDBWarehouse, released

CHILD_FROM = 400
"""Pages from which a child process draws them: the child's start-up, 3 to 4 s before its first pages, is
about what drawing 350 pages costs here (measured: at 250 experiments the night's report took as long
either way, 9.1 and 9.2 s; at 1,000 it took 21 to 24 s with the child, 30 s without)."""
BATCH = 20
"""Pages per batch the child sends: small enough that recording starts early, large enough to pickle cheaply."""
DRAW_WHILE_WAITING = True
"""Whether this process draws a page itself when the child has sent nothing it has not read (True), or waits
for the child's page (False: every page then comes from the child while it runs, as the tests check)."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Page:
    """One experiment's page: its metadata, its plots (None if it failed), its index row and the error."""

    experiment_id: str
    metadata: dict
    drawn: tuple[bytes, bytes] | None
    row: IndexRow
    error: str | None


@dataclass(frozen=True)
class PageRequest:
    """What the child needs to load and draw the pages: the warehouse, the look and the plot folder."""

    warehouse: str
    memory_limit: str
    as_of: str | None
    plot_folder: str


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def draw_page(view: ExperimentView, cache: PlotCache) -> Page:
    """One experiment's page; a failure of any part is caught and returned as the error, with a page and
    a row that say so (one experiment never fails the night)."""
    try:
        drawn = view_plots(view, cache)
        return Page(view.experiment_id, experiment_metadata(view, *drawn), drawn, index_row(view), None)
    except Exception as exc:  # noqa: BLE001 - any failure of one page is recorded against its experiment
        error = _error(exc)
        return Page(view.experiment_id, failed_metadata(view.experiment_id, error), None,
                    failed_row(view.experiment_id, error), error)


@dataclass(frozen=True)
class _Child:
    process: subprocess.Popen
    pages: IO[bytes]  # the pipe of its pages: a descriptor of its own, so nothing the child prints mixes in
    errors: IO[bytes]  # its standard error, read when it stops early
    batches: queue.Queue  # its batches of pages as they arrive, then what ended them (EOFError at its end)
    reader: threading.Thread  # unpickles the batches into ``batches``, so that this process never waits to look


def _read(stream: IO[bytes], batches: queue.Queue) -> None:
    while True:
        try:
            batch = pickle.load(stream)
            if not (isinstance(batch, list) and all(isinstance(p, Page) for p in batch)):
                raise TypeError(f"the child sent a {type(batch).__name__}, not a batch of pages")
            batches.put(batch)
        except BaseException as exc:  # noqa: BLE001 - the end of the stream, or whatever broke it, is the last item
            batches.put(exc)
            return


@contextmanager
def page_source(request: PageRequest, expected: int, child_from: int | None = None,
                warn: Callable[[str], None] = _log.warning) -> Iterator[Callable[[Sequence[ExperimentView]], Iterator[Page]]]:
    """A function that yields the page of each view in order, drawn by a child process started now when
    ``expected`` (the pages the night is likely to draw: the experiments of the last night) reaches
    ``child_from`` (default :data:`CHILD_FROM`), else drawn here.

    Enter it before loading the views, so the child starts while they load, and before any connection to the
    warehouse: a night that holds the warehouse open (``zcl_assets.warehouse.held_open``) lets the child read it
    (``released``) until the child is stopped, on exit.
    """
    drawer = expected >= (CHILD_FROM if child_from is None else child_from)
    with released(request.warehouse) if drawer else nullcontext():  # the child reads the warehouse too
        child = _start(request, warn) if drawer else None
        try:
            yield lambda views: _pages(views, child, PlotCache(request.plot_folder), warn)
        finally:
            if child is not None:
                _stop(child)
                for partial in Path(request.plot_folder).glob(f".*.{child.process.pid}.tmp"):  # a plot it was writing
                    partial.unlink(missing_ok=True)


def _start(request: PageRequest, warn: Callable[[str], None]) -> _Child | None:
    errors = process = pages = None
    try:
        errors = tempfile.TemporaryFile()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sys.path if p)}  # the code this process runs
        read_end, write_end = os.pipe()
        pages = os.fdopen(read_end, "rb")
        try:  # -P: the child imports that code, never a copy in the current folder
            process = subprocess.Popen([sys.executable, "-P", "-m", __name__, str(write_end)], stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=errors, env=env, pass_fds=(write_end,))
        finally:
            os.close(write_end)
        pickle.dump(request, process.stdin)
        process.stdin.close()
        batches: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_read, args=(pages, batches), name="page-child-reader", daemon=True)
        reader.start()
    except Exception as exc:  # noqa: BLE001 - no process, pipe, temp file or thread: the pages are drawn here
        if process is not None:
            process.kill()
            process.wait()
        for stream in (process.stdin if process else None, pages, errors):
            if stream is not None:
                with suppress(OSError):
                    stream.close()
        warn(f"pages are drawn in this process: the child that draws them could not start ({_error(exc)})")
        return None
    return _Child(process, pages, errors, batches, reader)


def _stop(child: _Child) -> None:
    if child.process.poll() is None:  # it may still draw pages this process drew itself
        child.process.kill()
    child.process.wait()
    child.reader.join(timeout=10)  # the child's end closes the stream the reader waits on
    if not child.reader.is_alive():  # else a process the child started holds the pipe: leave it to the daemon
        child.pages.close()
    child.errors.close()


def _pages(views: Sequence[ExperimentView], child: _Child | None, cache: PlotCache,
           warn: Callable[[str], None]) -> Iterator[Page]:
    received: dict[str, Page] = {}  # the child's copies of pages drawn here stay unread: a few MB at most
    for view in views:
        while child is not None and view.experiment_id not in received:
            try:
                batch = child.batches.get(block=not DRAW_WHILE_WAITING)
            except queue.Empty:  # nothing from the child yet: draw this page here rather than wait
                break
            if isinstance(batch, BaseException):  # whatever stops the child's pages, they are drawn here
                why = _last_line(child)
                ended = isinstance(batch, EOFError) and child.process.returncode == 0  # else it broke: say how
                why = "it sent no page of it" if ended else f"it stopped: {_error(batch)}; {why}"
                warn(f"pages from {view.experiment_id} on are drawn in this process, not by the child ({why})")
                child = None
            else:
                received.update((p.experiment_id, p) for p in batch)
        page = received.pop(view.experiment_id, None)
        yield page if page is not None else draw_page(view, cache)


def _last_line(child: _Child) -> str:
    """The last line the child wrote to its standard error (its error), or its exit status."""
    try:
        child.process.wait(timeout=1)  # it may be exiting after its last batch
    except subprocess.TimeoutExpired:
        child.process.kill()
        child.process.wait()
    child.errors.seek(0)
    lines = child.errors.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {child.process.returncode}"


def serve(request: PageRequest, out) -> None:
    """The child: load the look's views and write their pages to ``out``, pickled in batches of :data:`BATCH`."""
    with DuckDBWarehouse(path=request.warehouse, memory_limit=request.memory_limit).connect(read_only=True) as con:
        views = load_views(con, request.as_of)
    cache = PlotCache(request.plot_folder)
    for start in range(0, len(views), BATCH):
        pickle.dump([draw_page(v, cache) for v in views[start:start + BATCH]], out)
        out.flush()


if __name__ == "__main__":  # the child: by the module's own name, so its pages unpickle as this module's Page
    from zcl_assets.defs.reports import pages

    with os.fdopen(int(sys.argv[1]), "wb") as out:  # the descriptor of its pages, which the night passed
        pages.serve(pickle.load(sys.stdin.buffer), out)
