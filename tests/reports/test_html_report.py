"""`zcl report --html FILE`: one self-contained page with every experiment, its figures and plots."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET

import duckdb
from click.testing import CliRunner

from tests.reports.conftest import NIGHTS, SRM_EXPERIMENT
from zcl_assets.cli import main
from zcl_assets.reports.formatting import interval


def test_html_report_renders_every_experiment_with_its_plots_offline(looked, tmp_path):
    path = tmp_path / "report.html"
    result = CliRunner().invoke(
        main, ["--warehouse", str(looked.warehouse), "report", "--html", str(path)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    page = path.read_text(encoding="utf-8")
    with duckdb.connect(str(looked.warehouse), read_only=True) as con:
        registered = [r[0] for r in con.execute("SELECT experiment_id FROM staged_experiments ORDER BY 1").fetchall()]
        intervals = con.execute(
            "SELECT experiment_id, cs_low, cs_high FROM experiment_analysis WHERE is_primary AND as_of = ?", [NIGHTS[-1]]
        ).fetchall()

    # Self-contained: nothing fetched from elsewhere, no script.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<script" not in page and "<link" not in page

    # Every experiment has a card with its two plots, and every plot is a well-formed SVG of the width drawn.
    cards = [tuple(chunk.split('">', 1)) for chunk in page.split('<div class="card" id="x-')[1:]]
    assert sorted(c[0] for c in cards) == registered
    for experiment_id, card in cards:
        images = re.findall(r'<img alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)">', card)
        assert [alt for alt, _ in images] == [f"forest plot of {experiment_id}", f"look history of {experiment_id}"]
        for _, data in images:
            svg = ET.fromstring(base64.b64decode(data))
            assert svg.tag == "{http://www.w3.org/2000/svg}svg" and int(svg.get("width")) >= 500
            assert float(svg.get("height")) >= 100

    # Each deciding interval of the latest look is on the page, beside the method that names it.
    for experiment_id, low, high in intervals:
        card = dict(cards)[experiment_id]
        assert f"<b>{interval(low, high)}</b>" in card, experiment_id
    assert "asymptotic confidence sequence (Waudby-Smith et al. 2024)" in page

    # Sorted by what needs attention: the experiment whose allocation check fires comes first.
    headings = re.findall(r'<h2 id="g-([a-z_]+)">', page)
    assert headings[0] == "invalid"
    assert [c[0] for c in cards][0] == SRM_EXPERIMENT
    assert "SRM mismatch" in dict(cards)[SRM_EXPERIMENT] and 'class="alarm"' in dict(cards)[SRM_EXPERIMENT]

    # Small enough to mail: a few kilobytes per plot.
    assert len(page) < 60_000 * len(registered)
