"""The plots draw each figure where its value says, stay bounded for any registration, and no figure (an
MDE of 1e308, a registration of 1,000 arms) makes a plot, a page or a report raise."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

import polars as pl
import pytest

from tests.reports.views import comparison, view
from zcl_assets.defs.reports.metadata import experiment_metadata
from zcl_assets.reports.html import render_html
from zcl_assets.reports.index import attention_markdown, index_markdown, index_row
from zcl_assets.reports.markdown import verdict_markdown
from zcl_assets.reports.plots import MAX_PANELS, MAX_ROWS, forest_plot, look_history
from zcl_assets.reports.svg import nice_ticks
from zcl_assets.reports.text import render_report

SVG = "{http://www.w3.org/2000/svg}"


def _shapes(svg: bytes, kind: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if e.get("class") == kind]


def test_the_confidence_sequence_is_drawn_where_its_ends_are():
    # CS [-0.05, +0.15] around zero: zero sits a quarter of the bar's width from its left end (0.05 / 0.20)
    svg = forest_plot(view(rows=[comparison(cs_low=-0.05, cs_high=0.15, ci_low=-0.01, ci_high=0.11, difference=0.05)]))
    (bar,) = _shapes(svg, "cs")
    (zero,) = _shapes(svg, "zero")
    left, width = float(bar.get("x")), float(bar.get("width"))
    assert (float(zero.get("x1")) - left) / width == pytest.approx(0.25, abs=0.2 / width)  # 0.1 px rounding each end
    (dot,) = _shapes(svg, "difference")
    assert (float(dot.get("cx")) - left) / width == pytest.approx(0.5, abs=0.2 / width)  # +0.05 is the bar's middle
    (band,) = _shapes(svg, "mde")  # the MDE of 0.05: from -0.05 (the bar's left end) to +0.05 (its middle)
    assert float(band.get("x")) == pytest.approx(left, abs=0.2)
    assert float(band.get("width")) == pytest.approx(width / 2, abs=0.3)


def test_nice_ticks_are_round_numbers_inside_the_range():
    assert nice_ticks(-0.0123, 0.1447) == [0.0, 0.05, 0.1]  # step 0.05: 0.157 / 4 = 0.039 rounds up to 0.05
    assert nice_ticks(0, 5214) == [0.0, 2000.0, 4000.0]
    assert nice_ticks(-1e300, 1e300)[0] == -1e300 and len(nice_ticks(-1e300, 1e300)) <= 8


def _huge_mde_view():
    rows = [comparison(), comparison(metric="tokens", role="guardrail", is_primary=False, direction="decrease",
                                     cs_low=1e308, cs_high=float("inf"), ci_low=-1e308, ci_high=1e308, difference=1e308)]
    return view(rows=rows, mde=1e308, guardrails=[{"metric": "tokens", "direction": "decrease", "margin": 1e308}])


def test_an_mde_of_1e308_makes_no_plot_page_or_report_raise():
    huge = _huge_mde_view()
    forest, history = forest_plot(huge), look_history(huge)
    for svg in (forest, history):
        root = ET.fromstring(svg)
        assert "inf" not in svg.decode() and "nan" not in svg.decode().lower()
        assert all(float(root.get(k)) > 0 for k in ("width", "height"))
    assert "1e+308" in forest.decode() and "lies beyond the axis" in forest.decode()
    metadata = experiment_metadata(huge, forest, history)
    assert len(metadata["verdict"].value) < 1000
    render_report([huge], details=[huge.experiment_id])
    render_html([huge], {huge.experiment_id: (forest, history)})
    index_markdown([index_row(huge)])


def _wide_view(arms: int = 1000, looks: int = 3):
    base = comparison()
    rows = [{**base, "treatment_arm": f"arm-{i:04d}", "cs_p_adjusted": (i % 97) / 97, "decision": "continue"}
            for i in range(arms)]
    days = [dt.date(2026, 10, 1) + dt.timedelta(days=d) for d in range(looks)]
    history = pl.DataFrame([{**r, "as_of": day} for day in days for r in rows])
    return view(rows=rows, looks=history, as_of=days[-1].isoformat(),
                arms=[{"name": "control", "allocation": None}] + [{"name": r["treatment_arm"], "allocation": None} for r in rows])


def test_a_registration_of_1000_arms_draws_a_bounded_plot_that_says_what_it_leaves_out():
    wide = _wide_view()
    forest, history = forest_plot(wide), look_history(wide)
    assert len(_shapes(forest, "cs")) == MAX_ROWS and len(_shapes(history, "cs")) == MAX_PANELS
    assert "showing 12 of 1,000 comparisons (the smallest Holm-adjusted anytime-valid p)" in forest.decode()
    assert "showing 4 of 1,000 comparisons" in history.decode()
    assert len(forest) < 20_000 and len(history) < 40_000
    # the comparisons drawn are those nearest a decision: adjusted p = 0 for the 11 arms 0, 97, ..., 970, then
    # p = 1/97 for arm 1 (the first of its ties), in the table's order
    labels = [t.text for t in ET.fromstring(forest).iter(f"{SVG}text") if t.text and t.text.startswith("arm-")]
    assert labels == [f"arm-{i:04d} vs control" for i in sorted([*range(0, 1000, 97), 1])]


def test_a_registration_of_1000_arms_gives_bounded_tables_and_pages():
    wide = _wide_view()
    metadata = experiment_metadata(wide, b"<svg ", b"<svg ")
    for key, rows in (("arms", 1001), ("comparisons", 1000), ("descriptive", 1000)):  # control and 1,000 arms
        records = metadata[key].value.records
        assert len(records) == 51, key  # 50 rows and one that says where the rest is
        assert f"{rows - 50} more rows" in " ".join(str(v) for v in records[-1].data.values() if v), key
    assert len(metadata["look_history"].value.records) == MAX_PANELS * 3  # the comparisons the history plot draws
    assert len(verdict_markdown(wide)) < 1000 and "more comparisons" in verdict_markdown(wide)
    assert len(attention_markdown([index_row(wide)], wide.as_of)) < 1000


def test_the_page_history_table_shows_the_latest_looks_after_many_nights():
    # 60 nights of one comparison: the table keeps 50 rows, so it must be the newest 50 (nights 60 down
    # to 11), then a row saying 10 more are left out
    long = _wide_view(arms=1, looks=60)
    records = experiment_metadata(long, b"<svg ", b"<svg ")["look_history"].value.records
    days = [r.data["as_of"] for r in records[:-1]]
    assert days[0] == "2026-11-29" and days[-1] == "2026-10-11" and days == sorted(days, reverse=True)
    assert "10 more rows" in str(records[-1].data["as_of"])


@pytest.mark.parametrize("value", [1.0, 2.25, -3, 0, True, float("nan"), "a b", "mde", 'say "x"', "it's",
                                   "a&b<c>", "both \" and '", "tab\there", "line\nbreak"])
def test_an_attribute_is_quoted_as_the_standard_library_quotes_it(value):
    from xml.sax.saxutils import quoteattr

    from zcl_assets.reports.svg import _fmt, _quoted

    assert _quoted(value) == quoteattr(_fmt(value))
