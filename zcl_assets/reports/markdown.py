"""Markdown renderings for the UI: tables, and one experiment's verdict with its plots."""

from __future__ import annotations

import base64
import math

import polars as pl

from zcl_assets.reports.experiments import NOT_COMPUTED, ExperimentView
from zcl_assets.reports.formatting import count, direction_words, interval, number, p_is
from zcl_assets.reports.methods import DECIDING_INTERVAL, method_name


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.0f}"
    return str(value).replace("|", "\\|")


def markdown_table(frame: pl.DataFrame) -> str:
    """A Markdown table of ``frame`` (floats to 4 significant digits); ``"(none)"`` if empty."""
    if frame.height == 0:
        return "(none)"
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * frame.width
    rows = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([header, rule, *rows])


def png_image(png: bytes, alt: str) -> str:
    """A Markdown image embedding ``png`` as a ``data:`` URI (the Dagster UI renders these)."""
    return f"![{alt}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"


INLINE_LIMIT = 1000
"""The Dagster UI shows a Markdown entry inline only below this many characters (else behind a button)."""


def verdict_markdown(view: ExperimentView, limit: int = INLINE_LIMIT) -> str:
    """The verdict in short lines (under ``limit`` characters, so the UI shows it inline, and lines
    short enough to read in a narrow column): decision and reason, each primary comparison's
    deciding interval with its method, SRM status, progress to the plan and days left. The
    reason is dropped first when it would be longer."""
    decision = view.decision.upper()
    srm = view.srm_status.upper() if view.srm_alarm else view.srm_status
    direction = direction_words(view.direction_of(view.primary_metric))
    fraction = view.information_fraction
    plan = (
        f"{fraction:.0%} of {count(view.planned_per_arm)} units per arm" if view.plan_reachable and fraction is not None
        else "unreachable" if not view.plan_reachable else NOT_COMPUTED
    )
    days = f"{number(view.days_left, 2)}" if view.days_left is not None else NOT_COMPUTED
    lines = [
        f"**Deciding interval** of {view.primary_metric} ({direction}):",
        *(f"{r['treatment_arm']} vs {r['control_arm']} **{interval(r['cs_low'], r['cs_high'])}**" for r in view.primary_rows()),
        f"method: {method_name(DECIDING_INTERVAL, cite=True)}",
    ]
    facts = [f"**SRM {srm}** (sequential {p_is(view.srm_p)})", f"**Plan:** {plan}", f"**Days left:** {days}",
             f"look of {view.as_of}"]
    reason = view.decision_reason
    for head in ([f"**Decision: {decision}**", reason] if reason else [f"**Decision: {decision}**"], [f"**Decision: {decision}**"]):
        text = "\n\n".join(_lines(head) for head in (head, lines, facts))
        if len(text) < limit:
            return text
    return "\n\n".join([f"**Decision: {decision}**", _lines(facts)])[: limit - 1]


def _lines(lines: list[str]) -> str:
    """One Markdown paragraph whose lines break where given (two trailing spaces: a hard break)."""
    return "  \n".join(lines)


def plots_markdown(view: ExperimentView, forest_png: bytes, history_png: bytes) -> str:
    """The forest plot and the look history as Markdown images (PNG ``data:`` URIs), with captions."""
    return "\n\n".join([
        (
            f"**Forest plot** of the look of {view.as_of}: every metric and comparison; thick bar = confidence "
            "sequence (decides), thin bar = descriptive 95% interval, grey band = plus or minus the MDE."
        ),
        png_image(forest_png, f"forest plot of {view.experiment_id}"),
        (
            f"**Look history** of the primary metric over {view.looks} look{'s' if view.looks != 1 else ''}: the "
            "confidence sequence narrows as units accrue toward the planned sample."
        ),
        png_image(history_png, f"look history of {view.experiment_id}"),
    ])
