"""Shared fixtures: a fresh landing folder and warehouse per test, and the shared data folder."""

import os
from pathlib import Path

import dagster as dg
import pytest
from hypothesis import Phase, settings

# Property tests are deterministic: examples derive from each test's own code, not from a
# random seed or a database of earlier failures, so every run (and every mutant) sees the same;
# no deadline, since how long an example takes depends on the machine's load, not on the code.
settings.register_profile("seeded", derandomize=True, database=None, deadline=None)
# benchmarks/mutation.py: a mutant is killed by the first failing example; shrinking it only
# makes the failure readable, and took up to five minutes for one mutant.
settings.register_profile(
    "mutation", parent=settings.get_profile("seeded"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
)
settings.load_profile(os.environ.get("ZCL_HYPOTHESIS_PROFILE", "seeded"))

# ../shared/data/real beside the checkout; ZCL_SHARED_DATA names it for a copy of the project
# elsewhere (benchmarks/mutation.py runs the tests in one).
SHARED_DATA = Path(os.environ.get("ZCL_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data") / "real"
AB_DATA = SHARED_DATA / "udacity_ab_data" / "ab_data.csv"


def require_shared_data(path: Path) -> None:
    """Skip a test whose shared data file is absent on a developer machine; fail it in CI.

    The data may not be bundled (its license allows tests only: README), so a checkout without ``../shared`` can
    still run the rest of the suite. Where the folder is known to exist (``.ci/run`` sets
    ``ZCL_REQUIRE_SHARED_DATA`` when it finds it; ``CI``) a missing file is a failure, never a
    silent skip.
    """
    if path.exists():
        return
    message = f"shared data file not found at {path} (../shared/data beside the checkout)"
    if os.environ.get("CI") or os.environ.get("ZCL_REQUIRE_SHARED_DATA"):
        pytest.fail(message)
    pytest.skip(message)


# The tests that the mutation runner gives a mutant, cheapest level first (its `[tool.mutmut]`
# selection is in that order), each module's tests kept together so its fixtures run once.
MUTATION_ORDER = ("tests/stats", "tests/analysis", "tests/simulation", "tests/ingest", "tests/importers", "tests/test_docs.py",
                  "tests/end_to_end")


_SHARED_GROUPS = ("tests/reports", "tests/portability")
"""Folders whose tests run on one worker: the report tests share a session fixture; the Spark
tests would otherwise start two Spark drivers at once on the machine's two cores."""


def worker_group(nodeid: str) -> str:
    """The tests that run on one pytest-xdist worker together: a file's tests (so a module's
    fixture, often a whole nightly run, is built once), or a whole folder of ``_SHARED_GROUPS``."""
    path = nodeid.split("::")[0]
    return next((g for g in _SHARED_GROUPS if path.startswith(g + "/")), path)


def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs two workers; each group of :func:`worker_group` goes to one of them.

    pytest-xdist's own ``--dist loadgroup`` cannot group on pytest 9 (it renames test ids, which
    pytest 9 no longer takes), so the groups are given to its scope scheduler directly."""
    from xdist.scheduler import LoadScopeScheduling

    class WorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return WorkerGroups(config, log)


LONG_TESTS = (
    # robustness: runs killed, crashed or started at once, in child processes
    "tests/end_to_end/test_fault_injection.py", "tests/end_to_end/test_killed_nights.py",
    "tests/end_to_end/test_killed_run.py", "tests/end_to_end/test_concurrent_first_runs.py",
    "tests/end_to_end/test_look_crash_window.py",
    # many nights compared with fresh loads, bit by bit
    "tests/end_to_end/test_incremental_equals_fresh.py", "tests/end_to_end/test_corrections.py",
    "tests/end_to_end/test_cuped_incremental.py",
    "tests/end_to_end/test_bit_identical.py", "tests/end_to_end/test_quiet_night.py",
    "tests/end_to_end/test_no_secret_anywhere.py", "tests/end_to_end/test_world_decisions.py",
    "tests/end_to_end/test_ab_export_pipeline.py", "tests/sources/test_postgres_nights.py",
    "tests/importers/test_default_import_srm.py",
    # the other engine, the browser, and the largest property and reference sweeps
    "tests/portability/", "tests/reports/test_browser.py", "tests/ingest/test_contract_properties.py",
    "tests/end_to_end/test_every_bad_input_kind.py",
    "tests/stats/test_multiplicity.py::test_holm_steps_matches_statsmodels_on_many_families_and_reads_levels",
)
"""Tests that ``make test`` leaves to ``make test-long`` (marker ``long``), so that the first finishes
in under 5 minutes on 2 cores; CI (``.ci/run``) runs both, so every test runs there."""


def pytest_collection_modifyitems(config, items):
    """Mark the :data:`LONG_TESTS`; under the mutation runner, order the tests cheapest level first."""
    for item in items:
        if item.nodeid.startswith(LONG_TESTS):
            item.add_marker(pytest.mark.long)
    if os.environ.get("ZCL_HYPOTHESIS_PROFILE") == "mutation":
        def rank(item):
            return next((i for i, prefix in enumerate(MUTATION_ORDER) if item.nodeid.startswith(prefix)), len(MUTATION_ORDER))
        items.sort(key=rank)  # stable: each level keeps its collection order


@pytest.fixture
def pipeline_paths(tmp_path, monkeypatch):
    """(landing dir, warehouse file) under tmp_path, exported as the pipeline's environment."""
    landing = tmp_path / "landing"
    warehouse = tmp_path / "warehouse.duckdb"
    monkeypatch.setenv("ZCL_LANDING_DIR", str(landing))
    monkeypatch.setenv("ZCL_WAREHOUSE", str(warehouse))
    return landing, warehouse


@pytest.fixture
def instance():
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Leave no dead Dagster instance as the process's definitions state storage.

    Entering a persistent Dagster instance (``with instance:``) makes its state storage the one
    definitions load against, in a context variable of the process, until the block exits; one
    left there after its instance is gone makes every later load in the worker fail ("Attempted
    to resolve undefined DagsterInstance weakref"). No test holds one across tests, so after each
    test and its fixtures' teardown any storage left is dropped (and the test named in the file
    ``ZCL_TRACE_DEFS_STATE`` names, when set)."""
    yield
    from dagster._core.storage.defs_state import base

    if base.DefsStateStorage.get() is not None:
        base._current_storage.set(None)
        if os.environ.get("ZCL_TRACE_DEFS_STATE"):
            with open(os.environ["ZCL_TRACE_DEFS_STATE"], "a", encoding="utf-8") as trace:
                trace.write(f"{item.nodeid}\n")
