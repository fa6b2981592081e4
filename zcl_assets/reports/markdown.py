r"""Markdown renderings for the UI: escaped text, tables, one experiment's verdict and its plots, the
night's index.

Every value that comes from the data (an id, an arm or metric name, a hypothesis, a reason) goes
through :func:`text` before it is written into Markdown: the Dagster UI renders metadata with
GitHub-flavoured Markdown, so unescaped text could add an image that fetches an outside URL, a
link, or change the Markdown around it. A link or an image of these renderings is only ever one
the code writes itself (:func:`experiment_link`, :func:`svg_image`).

Examples:
    >>> print(text("![pix](evil) <b>x</b>"))
    \!\[pix\]\(evil\) \<b\>x\<\/b\>
    >>> print(code_block("a ``` b"))
    ````
    a ``` b
    ````
"""

from __future__ import annotations

import base64
import math
import re
from urllib.parse import quote

import polars as pl

from zcl_assets.reports.alarms import SYMBOL
from zcl_assets.reports.experiments import NOT_COMPUTED, ExperimentView
from zcl_assets.reports.formatting import (
    count,
    days_left_text,
    direction_words,
    interval,
    p_is,
    p_value,
    plan_reached,
    segment_arm,
    segment_label,
    signed,
)
from zcl_assets.reports.methods import DECIDING_INTERVAL, method_name

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
"""ASCII punctuation: CommonMark lets a backslash escape each of these, and then it means nothing."""
JOINER = "\u2060"
"""WORD JOINER: invisible, breaks GitHub's literal autolinks (``www.``, ``http://``, ``a@b.c``)."""


def text(value: object) -> str:
    """``value`` as Markdown that shows exactly its characters: one line (a newline could start a
    block), every ASCII punctuation character backslash-escaped, and an invisible word joiner
    after ``:``, before ``@`` and before a ``.`` that a letter follows, so that no literal
    autolink (``www.x.com``, ``https://...``, ``a@b.com``) forms."""
    out = []
    words = " ".join(str(value).split())
    for i, char in enumerate(words):
        if char == "@" or (char == "." and i + 1 < len(words) and words[i + 1].isalpha()):
            out.append(JOINER)
        out.append("\\" + char if char in _PUNCTUATION else char)
        if char == ":":
            out.append(JOINER)
    return "".join(out)


def code_block(value: str) -> str:
    """``value`` as a fenced code block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{value}\n{fence}"


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return f"{value:.4g}" if abs(value) < 1e6 or abs(value) >= 1e15 else f"{value:.0f}"
    return text(value)


def markdown_table(frame: pl.DataFrame) -> str:
    """A Markdown table of ``frame`` (floats to 4 significant digits, text escaped); ``"(none)"`` if empty."""
    if frame.height == 0:
        return "(none)"
    header = "| " + " | ".join(text(c) for c in frame.columns) + " |"
    rule = "|" + "---|" * frame.width
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows])


def svg_image(svg: bytes, alt: str) -> str:
    """A Markdown image embedding ``svg`` as a ``data:`` URI (the Dagster UI renders these)."""
    return f"![{text(alt)}](data:image/svg+xml;base64,{base64.b64encode(svg).decode('ascii')})"


def experiment_page(experiment_id: str) -> str:
    """The path of an experiment's page in the Dagster UI (its partition of ``experiment_report``)."""
    return f"/assets/experiment_report?view=partitions&partition={quote(experiment_id, safe='')}"


def experiment_link(experiment_id: str) -> str:
    """A Markdown link to the experiment's page, its id shown as text."""
    return f"[{text(experiment_id)}]({experiment_page(experiment_id)})"


INLINE_LIMIT = 1000
"""The Dagster UI shows a Markdown entry inline only below this many characters (else behind a button)."""


def headline(view: ExperimentView) -> str:
    """The verdict's heading: the decision, and the most severe alarm with its mark when there is one."""
    decision = view.decision.upper() if view.decision != NOT_COMPUTED else "DECISION NOT COMPUTED"
    if view.alarms:
        return f"### {SYMBOL} {decision}: {text(view.alarms[0].title)}"
    return f"### {decision}"


def verdict_markdown(view: ExperimentView, limit: int = INLINE_LIMIT) -> str:
    """The verdict, under ``limit`` characters so the UI shows it inline, in short paragraphs that wrap
    in a narrow column: a heading with the decision and the first alarm, each alarm marked with its
    figures, the decision's reason, each primary comparison's deciding interval with its method, then
    SRM status, progress to the plan and days left. The reason, then the alarms' figures, are dropped
    first when the whole would be longer (both are entries of their own on the page)."""
    alarms = [f"**{SYMBOL} {text(a.title)}:** {text(a.detail)}" for a in view.alarms]
    short = [f"**{SYMBOL} {text(a.title)}**" for a in view.alarms]
    reason = view.decision_reason
    why = [f"**Decision: {text(view.decision)}.** {text(reason)}"] if reason else [f"**Decision: {text(view.decision)}.**"]
    bare = [f"**Decision: {text(view.decision)}.**"]
    deciding = _lines([
        f"**Deciding interval** of {text(view.primary_metric)} ({direction_words(view.direction_of(view.primary_metric))}), "
        f"{method_name(DECIDING_INTERVAL, cite=True)}:",
        *(f"{text(r['treatment_arm'])} vs {text(r['control_arm'])} **{interval(r['cs_low'], r['cs_high'])}**"
          for r in view.primary_rows()[:6]),
        *([f"and {view.primary.height - 6:,} more comparisons: see `comparisons`"] if view.primary.height > 6 else []),
    ])
    facts = _lines([f"**SRM {view.srm_status}** (sequential {p_is(view.srm_p)})", f"**Plan:** {_plan(view)}",
                    f"**Days left:** {days_left_text(view)}", f"look of {view.as_of}"])
    for parts in ([*alarms, *why], [*alarms, *bare], [*short, *bare]):
        whole = "\n\n".join([headline(view), *parts, deciding, facts])
        if len(whole) < limit:
            return whole
    return "\n\n".join([headline(view), *bare, facts])[: limit - 1]


def _plan(view: ExperimentView) -> str:
    fraction = view.information_fraction
    if not view.plan_reachable:
        return "unreachable"
    return f"{plan_reached(fraction)} of {count(view.planned_per_arm)} units per arm" if fraction is not None else NOT_COMPUTED


def _lines(lines: list[str]) -> str:
    """One Markdown paragraph whose lines break where given (two trailing spaces: a hard break)."""
    return "  \n".join(lines)


def plots_markdown(view: ExperimentView, forest_svg: bytes, history_svg: bytes) -> str:
    """The forest plot and the look history as Markdown images (SVG ``data:`` URIs), with captions."""
    return "\n\n".join([
        (
            f"**Forest plot** of the look of {view.as_of}: every metric and comparison; thick bar = confidence "
            "sequence (decides), thin bar = descriptive 95% interval, grey band = plus or minus the MDE."
        ),
        svg_image(forest_svg, f"forest plot of {view.experiment_id}"),
        (
            f"**Look history** of the primary metric over {view.looks} look{'s' if view.looks != 1 else ''}: the "
            "confidence sequence narrows as units accrue toward the planned sample."
        ),
        svg_image(history_svg, f"look history of {view.experiment_id}"),
    ])


def breakdowns_markdown(view: ExperimentView) -> str:
    """The exploratory breakdown of the primary metric by model and budget, for the experiment's page."""
    if not view.breakdowns.height:
        return "No breakdown: no verified session with a value of the primary metric yet."

    frame = view.breakdowns.select(
        pl.format("{} vs {}", "treatment_arm", "control_arm").alias("comparison"), pl.col("dimension").alias("by"),
        pl.col("segment").map_elements(segment_label, return_dtype=pl.String),
        *[pl.struct(pl.all()).map_elements(lambda r, arm=arm: segment_arm(r, arm), return_dtype=pl.String).alias(arm)
          for arm in ("control", "treatment")],
        pl.struct("difference", "ci_low", "ci_high", "p_bh").map_elements(
            lambda r: f"{signed(r['difference'])} {interval(r['ci_low'], r['ci_high'])}, BH p {p_value(r['p_bh'])}",
            return_dtype=pl.String).alias("difference, 95% interval, adjusted p"),
    )
    return (f"**Exploratory, never a decision**: {text(view.primary_metric)} by the sessions' model and budget "
            f"(sessions, every epoch; {text(view.breakdowns.get_column('method')[0])}).\n\n" + markdown_table(frame))
