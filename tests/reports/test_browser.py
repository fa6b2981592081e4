"""The experiment view in a real browser: the Dagster webserver on loopback, headless Chromium.

Needs the system's Chromium (``apt-get install -y chromium``, Debian's package at
``/usr/bin/chromium``) and the ``playwright`` package, which drives that browser and never
downloads one. Without them the test is skipped with the reason on a developer machine and
fails in CI (``.ci/run`` installs Chromium and sets ``ZCL_REQUIRE_BROWSER=1``). Screenshots go to the test's folder, and also to
``$ZCL_SCREENSHOT_DIR`` when set (``docs/screenshots/`` keeps a set).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import duckdb
import pytest

from tests.reports.conftest import NIGHTS, SRM_EXPERIMENT
from zcl_assets.paths import project_root
from zcl_assets.reports.experiments import load_views
from zcl_assets.reports.formatting import interval

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SIMULATED = "sim-nw-bugfix-include"


def _require_browser() -> None:
    reason = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "the playwright package is not installed (make setup installs the test extras)"
    if reason is None and not CHROMIUM.exists():
        reason = f"no Chromium at {CHROMIUM}: install it with `apt-get install -y chromium`"
    if reason:
        if os.environ.get("CI") or os.environ.get("ZCL_REQUIRE_BROWSER"):
            pytest.fail(reason)  # CI installs the browser: a missing one there is a failure
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def webserver(looked, tmp_path):
    """The Dagster webserver on a free loopback port, showing the instance the looks were taken on."""
    _require_browser()
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(looked.home), "ZCL_WAREHOUSE": str(looked.warehouse),
           "ZCL_LANDING_DIR": str(looked.landing)}
    log = (tmp_path / "webserver.log").open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port),
         "-w", str(project_root() / "workspace.yaml")],
        cwd=project_root(), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(base + "/server_info", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the webserver did not start: see {tmp_path / 'webserver.log'}")
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


def _shoot(page, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path))
    keep = os.environ.get("ZCL_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / name)


def test_experiment_view_shows_decision_interval_srm_days_and_plots(looked, webserver, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        views = {v.experiment_id: v for v in load_views(con)}
    simulated, imported = views[SIMULATED], views[SRM_EXPERIMENT]
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1600, "height": 1000},
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            # From the asset: Partitions (click 1), the experiment (click 2).
            page.goto(webserver + "/assets/experiment_report")
            skip = page.get_by_role("button", name="Skip")  # Dagster's first-visit dialog
            try:
                skip.wait_for(timeout=20_000)
                skip.click()
            except Exception:  # noqa: BLE001 - the dialog is shown once per instance
                pass
            page.get_by_role("tab", name="Partitions").click()
            page.get_by_text(SIMULATED, exact=True).first.click()
            metadata = page.locator("table").filter(has_text="deciding_interval").first
            expect(metadata).to_contain_text("Decision: " + simulated.decision.upper())
            expect(metadata).to_contain_text(interval(simulated.primary_rows()[0]["cs_low"], simulated.primary_rows()[0]["cs_high"]))
            expect(metadata).to_contain_text("asymptotic confidence sequence (Waudby-Smith et al. 2024)")
            expect(metadata).to_contain_text("SRM ok")
            expect(metadata).to_contain_text("days left")
            expect(metadata).to_contain_text(NIGHTS[-1])
            _shoot(page, tmp_path, "experiment-view-simulated.png")

            page.get_by_text("[Show Markdown]").first.click()
            dialog = page.get_by_role("dialog")
            images = dialog.locator("img")
            expect(images).to_have_count(2)
            for i in range(2):
                assert images.nth(i).evaluate("img => img.complete && img.naturalWidth") >= 500
            expect(dialog).to_contain_text("Forest plot")
            _shoot(page, tmp_path, "experiment-view-plots.png")
            dialog.get_by_role("button", name="Close").click()

            # The imported experiment whose allocation check fires says so at the top of its view.
            page.goto(f"{webserver}/assets/experiment_report?view=partitions&partition={SRM_EXPERIMENT}")
            metadata = page.locator("table").filter(has_text="deciding_interval").first
            expect(metadata).to_contain_text("SRM MISMATCH")
            expect(metadata).to_contain_text(
                interval(imported.primary_rows()[0]["cs_low"], imported.primary_rows()[0]["cs_high"])
            )
            _shoot(page, tmp_path, "experiment-view-imported-srm.png")

            # The night's index lists every experiment, what needs attention first.
            page.goto(webserver + "/assets/analysis_report")
            expect(page.get_by_text(SRM_EXPERIMENT).first).to_be_visible()
            _shoot(page, tmp_path, "analysis-report.png")
        finally:
            browser.close()
