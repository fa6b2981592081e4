"""The analyst's view in a real browser at 1440 x 900: the Dagster webserver on loopback, headless Chromium.

The warehouse is the one `make run` builds: the bundled data landed by `zcl import bundled`, one
`zcl run` (on a fixed night, so that the test does not depend on the clock). From the night's
index (`analysis_report`) a person opens an invalid experiment (an SRM mismatch), one whose
adopt is held by a breached guardrail and a stalled one, each by a link of the index, and reads
the decision and the alarm on the first screen; no metadata element may reach beyond its pane.
The night's HTML report is read the same way: nothing beyond the window's right edge, the
alarms of its overview on the first screen, and its links leading to each experiment's card.

Needs the system's Chromium (``apt-get install -y chromium``, Debian's package at
``/usr/bin/chromium``) and the ``playwright`` package, which drives that browser and never
downloads one. Without them the test is skipped with the reason on a developer machine and
fails in CI (``.ci/run`` installs Chromium and sets ``ZCL_REQUIRE_BROWSER=1``). Screenshots go
to the test's folder, and also to ``$ZCL_SCREENSHOT_DIR`` when set (``docs/screenshots/`` keeps
a set); the time each experiment took to find is printed (``-s``) and written beside the screenshots
in the test's folder.
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

from resources import Warehouse
from zcl_assets.defs.reports.assets import report_path
from zcl_assets.paths import project_root
from zcl_assets.reports.experiments import load_views
from zcl_assets.reports.formatting import interval

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREEN = {"width": 1440, "height": 900}
INVALID, HELD, STALLED = "26bd38", "sim-ct-analysis-order", "sim-in-docs-include"
BUNDLED_NIGHT = "2026-11-15"  # the night `bundled_night` runs (tests/reports/conftest.py)


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


@pytest.fixture(scope="module")
def webserver(bundled_night, tmp_path_factory):
    """The Dagster webserver on a free loopback port, showing the instance the night was run on."""
    _require_browser()
    port = _free_port()
    log_path = tmp_path_factory.mktemp("webserver") / "webserver.log"
    log = log_path.open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(port),
         "-w", str(project_root() / "workspace.yaml")],
        cwd=project_root(), env={**os.environ, **bundled_night.env}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
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
                pytest.fail(f"the webserver did not start: see {log_path}")
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()


def _keep(path: Path) -> None:
    keep = os.environ.get("ZCL_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)


def _shoot(page, folder: Path, name: str) -> None:
    page.screenshot(path=str(folder / name))
    _keep(folder / name)


OVERFLOW = """() => {
  // Every metadata pane: the pane itself must not scroll sideways, and no element inside it may reach
  // beyond its right edge (a clipped cell, a table wider than the pane).
  const panes = [...document.querySelectorAll('[class*=MetadataScrollContainer], [class*=assetEventMetadataScrollContainer]')];
  const out = [];
  for (const pane of panes) {
    if (pane.scrollWidth > pane.clientWidth + 1) out.push(['pane', pane.clientWidth, pane.scrollWidth]);
    const edge = pane.getBoundingClientRect().right + 1;
    for (const el of pane.querySelectorAll('*')) {
      const box = el.getBoundingClientRect();
      if (box.width > 0 && box.right > edge) out.push([el.tagName, (el.innerText || '').slice(0, 60), box.right, edge]);
    }
  }
  return {panes: panes.length, overflow: out.slice(0, 10)};
}"""


def _fits(page) -> None:
    found = page.evaluate(OVERFLOW)
    assert found["panes"] >= 1, "no metadata pane on the page"
    assert found["overflow"] == [], found["overflow"]


def _on_first_screen(locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= SCREEN["height"]


def _skip_first_visit_dialog(page) -> None:
    skip = page.get_by_role("button", name="Skip")  # Dagster's first-visit dialog, once per instance
    try:
        skip.wait_for(timeout=15_000)
        skip.click()
    except Exception:  # noqa: BLE001 - not shown again once skipped
        pass


def _check_page(page, view, alarm: str, folder: Path, name: str) -> None:
    """The experiment's page: its heading names the decision and the alarm on the first screen, the verdict
    holds the deciding interval with its method, the SRM status and days left, and nothing overflows."""
    from playwright.sync_api import expect

    heading = page.locator("h3").filter(has_text=view.decision.upper()).first
    expect(heading).to_contain_text(alarm)
    assert _on_first_screen(heading), heading.bounding_box()
    verdict = page.locator("td").filter(has=heading).last
    first = view.primary_rows()[0]
    expect(verdict).to_contain_text(interval(first["cs_low"], first["cs_high"]))
    expect(verdict).to_contain_text("asymptotic confidence sequence (Waudby-Smith et al. 2024)")
    expect(verdict).to_contain_text(f"SRM {view.srm_status}")
    expect(verdict).to_contain_text("Days left:")
    for fact in ("Deciding interval", "SRM", "Days left:"):
        assert _on_first_screen(verdict.get_by_text(fact, exact=False).first), fact
    _fits(page)
    _shoot(page, folder, name)


def test_an_analyst_finds_each_alarm_from_the_index_at_1440_by_900(bundled_night, webserver, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    with duckdb.connect(str(bundled_night.warehouse), read_only=True) as con:
        views = {v.experiment_id: v for v in load_views(con)}
    assert [a.kind for a in views[INVALID].alarms][:1] == ["srm_mismatch"]
    assert [a.kind for a in views[HELD].alarms][:1] == ["guardrail_breached"] and "guardrail tokens breached" in views[HELD].decision_reason
    assert [a.kind for a in views[STALLED].alarms] == ["stalled"]
    found: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport=SCREEN,
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(webserver + "/assets/analysis_report")
            _skip_first_visit_dialog(page)

            # The index leads with what needs attention, on the first screen, and fits.
            attention = page.locator("h3").filter(has_text="need attention").first
            expect(attention).to_be_visible()
            assert _on_first_screen(attention)
            expect(page.locator("td").filter(has=attention).last).to_contain_text("SRM mismatch (1)")
            _fits(page)
            _shoot(page, tmp_path, "analysis-report.png")

            for experiment, alarm, name in ((INVALID, "SRM mismatch", "view-invalid-srm.png"),
                                            (HELD, "guardrail tokens breached", "view-guardrail-held.png")):
                started = time.monotonic()
                page.goto(webserver + "/assets/analysis_report")
                page.get_by_text("[Show Markdown]").first.click()  # the entry `index`
                dialog = page.get_by_role("dialog")
                link = dialog.get_by_role("link", name=experiment, exact=True)
                if experiment == INVALID:
                    dialog.get_by_role("link").first.scroll_into_view_if_needed()  # the dialog opens at its Close button
                    _shoot(page, tmp_path, "analysis-report-index.png")
                link.click()
                page.wait_for_url(f"**partition={experiment}**")
                _check_page(page, views[experiment], alarm, tmp_path, name)
                found[experiment] = time.monotonic() - started

            # The other front door: Partitions, the filter box, the experiment.
            started = time.monotonic()
            page.goto(webserver + "/assets/experiment_report")
            page.get_by_role("tab", name="Partitions").click()
            page.get_by_placeholder("Filter by name").fill(STALLED)
            page.get_by_text(STALLED, exact=True).first.click()
            _check_page(page, views[STALLED], "stalled since 2026-10-15", tmp_path, "view-stalled.png")
            found[STALLED] = time.monotonic() - started

            # Both plots load, as SVG images of the width drawn.
            page.get_by_text("[Show Markdown]").first.click()
            images = page.get_by_role("dialog").locator("img")
            expect(images).to_have_count(2)
            for i in range(2):
                assert images.nth(i).evaluate("img => img.complete && img.naturalWidth") >= 500
            _shoot(page, tmp_path, "plots-stalled.png")
        finally:
            browser.close()
    report = "\n".join(f"{experiment}: found in {seconds:.1f} s" for experiment, seconds in found.items())
    print("\ntime to find, by scripted clicks from the index or the Partitions filter:\n" + report)
    (tmp_path / "time-to-find.txt").write_text(report + "\n")
    assert set(found) == {INVALID, HELD, STALLED}


PAGE_OVERFLOW = """() => {
  // The page must not scroll sideways and no element may reach beyond the window's right edge.
  const edge = document.documentElement.clientWidth + 1;
  const out = [];
  if (document.documentElement.scrollWidth > edge) out.push(['page', document.documentElement.scrollWidth, edge]);
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > edge) out.push([el.tagName, (el.innerText || '').slice(0, 60), box.right, edge]);
  }
  return out.slice(0, 10);
}"""


def _launch(p):
    return p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS).new_page(viewport=SCREEN)


def test_the_html_report_reads_at_1440_by_900_and_its_links_lead_to_each_card(bundled_night, tmp_path):
    _require_browser()
    from playwright.sync_api import expect, sync_playwright

    path = report_path(Warehouse(path=str(bundled_night.warehouse)), BUNDLED_NIGHT)
    assert path.exists() and str(path) in bundled_night.outputs["run"]  # `zcl run` says where it is
    with duckdb.connect(str(bundled_night.warehouse), read_only=True) as con:
        views = {v.experiment_id: v for v in load_views(con)}
    with sync_playwright() as p:
        page = _launch(p)
        try:
            page.goto(path.as_uri())
            # the overview leads with the most severe alarm: its row, badge and alarm on the first screen
            first = page.locator("table").first.locator("tr").nth(1)
            expect(first).to_contain_text(INVALID)
            expect(first).to_contain_text("SRM mismatch")
            assert _on_first_screen(first), first.bounding_box()
            assert page.evaluate(PAGE_OVERFLOW) == []
            _shoot(page, tmp_path, "html-report.png")
            for experiment, alarm in ((INVALID, "SRM mismatch"), (HELD, "guardrail tokens breached"),
                                      (STALLED, "stalled since 2026-10-15")):
                page.locator("table").first.get_by_role("link", name=experiment, exact=True).click()
                card = page.locator(f"div.card:has(h3:has-text('{experiment}'))").first
                heading = card.locator("h3")
                expect(heading).to_contain_text(views[experiment].decision)
                assert _on_first_screen(heading), (experiment, heading.bounding_box())
                marked = card.locator("div.alarms li").first
                expect(marked).to_contain_text(f"\u26a0 {alarm}")
                assert _on_first_screen(marked), (experiment, marked.bounding_box())
                assert page.evaluate(PAGE_OVERFLOW) == [], experiment
                if experiment == HELD:
                    _shoot(page, tmp_path, "html-report-card.png")
        finally:
            page.context.browser.close()


def test_each_familys_power_curve_reads_in_the_ui_and_the_report(bundled_night, webserver, tmp_path):
    _require_browser()
    from playwright.sync_api import expect, sync_playwright

    from zcl_assets.reports.html import render_html
    from zcl_assets.stats.power import inflation_at, mde_reachable

    with duckdb.connect(str(bundled_night.warehouse), read_only=True) as con:
        families = con.execute("SELECT count(*) FROM family_outlook WHERE as_of = DATE '2026-11-15'").fetchone()[0]
    assert families == 0  # the bundled sessions end on 2026-10-15, a month before the night
    # a family with traffic, as the planner writes it (tests/end_to_end/test_plan_command.py checks the figures)
    r = float(inflation_at(0.0125, 0.8))
    busy = {"org_id": "org-with-traffic", "task_type": "triage", "traffic_per_day": 50.0, "verified_share": 0.8,
            "baseline": 0.5, "alpha_slots": 4, "slot_free": True, "next_free_slot": None, "experiments_sharing": 2,
            "comparison_alpha": 0.0125, "inflation": r,
            **{f"units_per_arm_{d}d": float(n) for d, n in ((14, 175), (28, 350), (56, 700))},
            **{f"mde_{d}d": mde_reachable(n, 0.5, 0.0125, 0.8, r, 0.8) for d, n in ((14, 175), (28, 350), (56, 700))}}
    page_file = tmp_path / "outlook.html"
    page_file.write_text(render_html([], {}, outlook=[busy]), encoding="utf-8")
    with sync_playwright() as p:
        page = _launch(p)
        try:
            # the UI and the night's HTML report say there is nothing to plan on, and why
            page.goto(webserver + "/assets/analysis_report")
            _skip_first_visit_dialog(page)
            expect(page.locator("tr").filter(has_text="family_outlook").first).to_contain_text(
                "No family had sessions in the 28 days before the night")
            page.goto(report_path(Warehouse(path=str(bundled_night.warehouse)), BUNDLED_NIGHT).as_uri())
            expect(page.locator("#g-outlook")).to_contain_text("Planning: what each family could detect tonight (0)")
            expect(page.get_by_text("No family had sessions in the 28 days before the night")).to_be_visible()
            # a family with traffic: its three curves, drawn at the width of the SVG
            page.goto(page_file.as_uri())
            card = page.locator("div.card:has(h3:has-text('org-with-traffic'))")
            expect(card).to_contain_text("detectable at power 80%: +0.236 in 14 days, +0.171 in 28 days, +0.123 in 56 days")
            curve = card.locator("img")
            assert curve.evaluate("img => img.complete && img.naturalWidth") == 540
            assert page.evaluate(PAGE_OVERFLOW) == []
            _shoot(page, tmp_path, "family-outlook-report.png")
        finally:
            page.context.browser.close()
