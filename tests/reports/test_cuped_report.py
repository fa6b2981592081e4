"""Each comparison's CUPED line, read as a person reads the text report, the HTML page and the Dagster page:
the method named (Deng et al. 2013) and the share of the variance it removed, or why it did not apply."""

from __future__ import annotations

import html
import re

import pytest

from tests.reports.views import comparison, view
from zcl_assets.defs.reports.metadata import experiment_metadata
from zcl_assets.reports.html import render_html
from zcl_assets.reports.text import render_experiment

APPLIED = {"cuped": True, "variance_reduction": 0.22348, "ci_method": "cuped_normal", "p_method": "cuped_normal"}


def _adjusted_view():
    """t1 adjusted (its variance 22.348% lower), t2 not (no unit of it had a pre-period mean yet)."""
    rows = [comparison(treatment_arm="t1", **APPLIED),
            comparison(treatment_arm="t2", cuped=False, variance_reduction=None)]
    return view(rows=rows, plan={"cuped": True}, arms=[{"name": a, "allocation": 1 / 3} for a in ("control", "t1", "t2")])


def _readable(page: str) -> str:
    """The page's text as a browser shows it: tags dropped, entities read, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _text(v) -> str:
    return re.sub(r"\s+", " ", "\n".join(render_experiment(v)))


def test_the_text_report_names_cuped_and_the_variance_it_removed_per_comparison():
    text = _text(_adjusted_view())
    # 0.22348 is printed to one decimal of a percent: 22.3%
    assert text.count("CUPED (Deng et al. 2013): variance reduced by 22.3%") == 1
    assert "no CUPED: no unit of the comparison has a pre-period mean yet" in text
    # the descriptive interval of the adjusted difference names its method
    assert "normal approximation of the CUPED-adjusted difference" in text


def test_the_html_page_and_the_dagster_page_say_the_same():
    v = _adjusted_view()
    page = _readable(render_html([v], {}))
    assert "CUPED (Deng et al. 2013): variance reduced by 22.3%" in page
    assert "no CUPED: no unit of the comparison has a pre-period mean yet" in page
    metadata = experiment_metadata(v, b"<svg/>", b"<svg/>")
    rows = {r.data["comparison"]: r.data["variance"] for r in metadata["descriptive"].value.records}
    assert rows == {"t1 vs control": "CUPED (Deng et al. 2013): variance reduced by 22.3%",
                    "t2 vs control": "no CUPED: no unit of the comparison has a pre-period mean yet"}
    assert metadata["cuped"] == ("t1 vs control: CUPED (Deng et al. 2013): variance reduced by 22.3%; "
                                              "t2 vs control: no CUPED: no unit of the comparison has a pre-period mean yet")


@pytest.mark.parametrize(("plan", "registration", "source", "why"), [
    ({"cuped": False}, {"cuped": None}, "sessions",
     "no history (fewer than 30 units with a pre-period mean before registration)"),
    ({"cuped": False}, {"cuped": False}, "sessions", "not asked for by the registration"),
    ({"cuped": False}, {}, "arm_snapshots", "an aggregate export has no unit to carry a pre-period mean"),
])
def test_where_cuped_did_not_apply_the_reports_say_why(plan, registration, source, why):
    v = view(rows=[comparison(cuped=False, variance_reduction=None, source=source)], plan=plan, **registration)
    assert f"no CUPED: {why}" in _text(v)
    assert f"no CUPED: {why}" in _readable(render_html([v], {}))


def test_a_look_written_before_cuped_says_nothing_of_it():
    v = view(rows=[comparison()])  # no cuped column, no plan: an older warehouse
    assert "CUPED" not in _text(v) and "CUPED" not in _readable(render_html([v], {}))


def test_a_continuous_primarys_segments_read_as_means_with_their_sd_and_welch_named():
    """The exploratory breakdown of a time primary: each arm as mean (sd), sessions; the method Welch t with BH."""
    import polars as pl

    from zcl_assets.analysis.breakdowns import WELCH_METHOD
    from zcl_assets.analysis.schema import SEGMENT_BREAKDOWNS
    from zcl_assets.reports.markdown import breakdowns_markdown

    row = {"as_of": None, "experiment_id": "exp", "control_arm": "control", "treatment_arm": "treatment",
           "metric": "time_minutes", "dimension": "model", "segment": "m-large", "n_control": 45, "x_control": None,
           "n_treatment": 52, "x_treatment": None, "mean_control": 28.44, "mean_treatment": 25.1, "sd_control": 7.91,
           "sd_treatment": 6.5, "difference": -3.34, "ci_low": -6.2, "ci_high": -0.48, "p": 0.022, "p_bh": 0.044,
           "label": "exploratory", "method": WELCH_METHOD}
    v = view(rows=[comparison(metric="time_minutes")], primary_metric="time_minutes")
    v = type(v)(**{**v.__dict__, "breakdowns": pl.DataFrame([row], schema=SEGMENT_BREAKDOWNS.polars)})
    page = _readable(render_html([v], {}))
    # 3 significant figures, as every figure of the reports
    assert "28.4 (sd 7.91), n 45" in page and "25.1 (sd 6.5), n 52" in page
    assert f"(sessions, every epoch; {WELCH_METHOD})" in page
    from markdown_it import MarkdownIt

    shown = _readable(MarkdownIt("commonmark").enable("table").render(breakdowns_markdown(v)))  # as the UI renders it
    assert "28.4 (sd 7.91), n 45" in shown and f"(sessions, every epoch; {WELCH_METHOD})" in shown
