"""A small SVG canvas for the report's plots: shapes and text written as XML, nothing rasterised.

Why SVG written directly: a plot costs about a millisecond (matplotlib's Agg renderer took
about 0.3 s a pair, 20 times the budget of a plot; ``benchmarks/plot_speed.py``), the file is a
few kilobytes of text, it scales on any screen, and a browser draws it from a ``data:`` URI in
an ``<img>`` (where an SVG cannot run a script or fetch anything). Every label is XML-escaped.

:class:`Axis` maps data values to pixels over limits that are always finite, however large the
values (an MDE of 1e308 cannot overflow the span), and :func:`nice_ticks` chooses the ticks.

Examples:
    >>> nice_ticks(-0.0123, 0.1447)
    [0.0, 0.05, 0.1]
    >>> Axis(-1.0, 1.0, 100.0, 300.0).x(0.5)
    250.0
"""

from __future__ import annotations

import functools
import math
import re
from xml.sax.saxutils import escape, quoteattr

FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
CHAR_WIDTH = 0.6
"""Width of a character in units of the font size: an upper bound for DejaVu Sans, used to shorten labels."""
LIMIT = 1e300
"""Values are clipped to plus or minus this before any arithmetic, so a span never overflows to infinity."""


def finite(*values: object) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def clip(value: float) -> float:
    return max(-LIMIT, min(LIMIT, value))


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values inside ``[low, high]`` (Heckbert 1990, "Nice numbers for graph
    labels", Graphics Gems: a step of 1, 2 or 5 times a power of ten)."""
    low, high = clip(low), clip(high)
    span = high - low
    if not span > 0:
        return [low]
    raw = span / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)
    first = math.ceil(low / step)
    ticks = []
    for i in range(first, first + count + 3):
        value = i * step
        if value > high + step * 1e-9:
            break
        ticks.append(0.0 if abs(value) < step * 1e-9 else round(value, 12 - math.floor(math.log10(step))))
    return ticks


class Axis:
    """A linear map of data ``[low, high]`` (clipped to finite values, widened when empty) to pixels
    ``[start, end]`` (``end`` may be below ``start``: a vertical axis grows upward)."""

    def __init__(self, low: float, high: float, start: float, end: float):
        low, high = clip(low), clip(high)
        if not high > low:
            half = max(abs(low) * 0.1, 1e-3)
            low, high = low - half, high + half
        self.low, self.high, self.start, self.end = low, high, start, end

    def x(self, value: float) -> float:
        """The pixel of ``value``; values beyond the limits are held at the edge."""
        value = min(max(clip(value), self.low), self.high)
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self, count: int = 5) -> list[float]:
        return nice_ticks(self.low, self.high, count)


def padded(values: list[float], share: float = 0.06) -> tuple[float, float]:
    """Limits around ``values`` (finite ones, clipped) with ``share`` of the span added on each side."""
    kept = [clip(v) for v in values if finite(v)] or [0.0]
    low, high = min(kept), max(kept)
    pad = (high / 2 - low / 2) * 2 * share or max(abs(high) * share, 1e-3)
    return clip(low - pad), clip(high + pad)


def shorten(text: str, width: float, size: float) -> str:
    """``text`` cut to fit ``width`` pixels at font ``size`` (an ellipsis marks a cut)."""
    room = max(int(width / (size * CHAR_WIDTH)), 1)
    return text if len(text) <= room else text[: max(room - 1, 0)] + "\u2026"


class Canvas:
    """An SVG drawing of ``width`` x ``height`` pixels; :meth:`svg` returns the document as bytes."""

    def __init__(self, width: int, height: float, title: str):
        self.width, self.height, self.title = width, height, title
        self.parts: list[str] = []

    def _attrs(self, attrs: dict[str, object]) -> str:
        return "".join(f" {_attribute_name(k)}={_quoted(v)}" for k, v in attrs.items() if v is not None)

    def rect(self, x: float, y: float, w: float, h: float, **attrs: object) -> None:
        self.parts.append(f"<rect{self._attrs({'x': x, 'y': y, 'width': max(w, 0.0), 'height': max(h, 0.0), **attrs})}/>")

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: object) -> None:
        self.parts.append(f"<line{self._attrs({'x1': x1, 'y1': y1, 'x2': x2, 'y2': y2, **attrs})}/>")

    def circle(self, x: float, y: float, r: float, **attrs: object) -> None:
        self.parts.append(f"<circle{self._attrs({'cx': x, 'cy': y, 'r': r, **attrs})}/>")

    def polygon(self, points: list[tuple[float, float]], **attrs: object) -> None:
        self.parts.append(f"<polygon{self._attrs({'points': ' '.join(f'{_fmt(x)},{_fmt(y)}' for x, y in points), **attrs})}/>")

    def polyline(self, points: list[tuple[float, float]], **attrs: object) -> None:
        self.parts.append(f"<polyline{self._attrs({'points': ' '.join(f'{_fmt(x)},{_fmt(y)}' for x, y in points), 'fill': 'none', **attrs})}/>")

    def text(self, x: float, y: float, text: str, size: float = 11, anchor: str = "start", **attrs: object) -> None:
        attrs = {"x": x, "y": y, "font_size": size, "text_anchor": anchor if anchor != "start" else None, **attrs}
        self.parts.append(f"<text{self._attrs(attrs)}>{escape(text)}</text>")

    def svg(self) -> bytes:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{_fmt(self.height)}" '
            f'viewBox="0 0 {self.width} {_fmt(self.height)}" font-family={quoteattr(FONT)}>'
            f"<title>{escape(self.title)}</title>"
            f'<rect width="100%" height="100%" fill="#ffffff"/>'
        )
        return (head + "".join(self.parts) + "</svg>").encode("utf-8")


@functools.cache
def _attribute_name(keyword: str) -> str:
    """The SVG attribute a keyword argument names: ``class_`` is ``class``, ``stroke_width`` is ``stroke-width``."""
    return keyword.rstrip("_").replace("_", "-")


_NEEDS_ESCAPE = re.compile("[&<>\"'\n\r\t]")


def _quoted(value: object) -> str:
    """``quoteattr(_fmt(value))``, without its escaping work for the numbers and plain words that
    nearly every attribute is (a night draws hundreds of thousands of them)."""
    text = _fmt(value)
    if isinstance(value, (int, float)) or not _NEEDS_ESCAPE.search(text):
        return f'"{text}"'
    return quoteattr(text)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return "0"
        text = f"{value:.1f}"
        return text[:-2] if text.endswith(".0") else text
    return str(value)
