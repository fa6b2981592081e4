"""Text renderings of tables for the UI (Markdown metadata) and the command line."""

from __future__ import annotations

import math

import polars as pl


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
