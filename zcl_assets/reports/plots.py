"""The two plots of an experiment, written as small SVG files (``reports/svg.py``).

- :func:`forest_plot`: one panel per metric, one row per comparison: the deciding confidence
  sequence as a thick bar, the descriptive 95% interval as a thin bar, the difference as a
  dot, against zero, the primary metric's band of plus or minus the MDE (where ``no_effect``
  can be read) and a guardrail's non-inferiority margin.
- :func:`look_history`: the primary comparisons over looks: the confidence sequence as a
  band that narrows as units accrue toward the planned sample.

Both are bounded whatever the registration: at most :data:`MAX_ROWS` comparisons per metric,
:data:`MAX_METRICS` metrics and :data:`MAX_PANELS` history panels are drawn (those with the
smallest Holm-adjusted anytime-valid p, the ones nearest a decision), and the plot says how
many it leaves out; the tables of the report list every comparison. A figure too large for
the axis (an MDE of 1e308) is drawn at the edge and named, never overflows the axis.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from pathlib import Path

import polars as pl

from zcl_assets.reports.experiments import ExperimentView
from zcl_assets.reports.formatting import count, direction_words, number, plan_reached
from zcl_assets.reports.svg import Axis, Canvas, finite, padded, shorten

CS_COLOUR = "#1f5fa8"
CI_COLOUR = "#333333"
MDE_COLOUR = "#e3e3e3"
MARGIN_COLOUR = "#c0392b"
GRID_COLOUR = "#eeeeee"
NOTE_COLOUR = "#666666"

WIDTH = 720
LABEL_WIDTH = 205
"""Left column of the forest plot: the comparison labels."""
ROW_HEIGHT = 22
MAX_ROWS = 12
"""Comparisons drawn per metric of the forest plot."""
MAX_METRICS = 8
"""Metric panels drawn in the forest plot."""
MAX_PANELS = 4
"""Primary comparisons drawn in the look history."""
MAX_POINTS = 120
"""Looks drawn with their interval per history panel (the band uses every look)."""
MDE_SHOWN = 4.0
"""The MDE band sets the axis only while it is at most this many times the largest figure drawn."""


def shown_rows(rows: pl.DataFrame, cap: int) -> pl.DataFrame:
    """``rows`` when at most ``cap``, else the ``cap`` with the smallest Holm-adjusted anytime-valid p
    (ties and missing p in the table's order), kept in the table's order."""
    if rows.height <= cap:
        return rows
    ranked = rows.with_row_index("_order").sort([pl.col("cs_p_adjusted").fill_nan(None), "_order"], nulls_last=True)
    return ranked.head(cap).sort("_order").drop("_order")


def _limits(values: list[float], mde: float | None) -> tuple[float, float, bool]:
    """Axis limits around ``values`` and zero; the MDE band joins them only while comparable
    (:data:`MDE_SHOWN`). Returns ``(low, high, mde_on_axis)``."""
    kept = [v for v in values if finite(v)] + [0.0]
    largest = max(abs(v) for v in kept)
    on_axis = mde is not None and finite(mde) and (largest == 0 or mde <= MDE_SHOWN * largest)
    if on_axis:
        kept += [-mde, mde]
    low, high = padded(kept)
    return low, high, on_axis


def forest_plot(view: ExperimentView) -> bytes:
    """SVG of every metric's comparisons of the latest look (see the module docstring)."""
    metrics = view.comparisons.get_column("metric").unique(maintain_order=True).to_list() if view.comparisons.height else []
    drawn = metrics[:MAX_METRICS]
    canvas = Canvas(WIDTH, 0, f"forest plot of {view.experiment_id}")
    canvas.text(10, 18, shorten(f"{view.experiment_id}: difference treatment \u2212 control, look of {view.as_of}",
                                WIDTH - 20, 12.5), 12.5, font_weight="bold")
    y = 30.0
    for metric in drawn:
        y = _forest_panel(canvas, view, metric, view.comparisons.filter(pl.col("metric") == metric), y)
    if len(metrics) > len(drawn):
        canvas.text(10, y + 12, f"{len(metrics) - len(drawn)} more metrics not drawn; the comparisons table lists them",
                    10, fill=NOTE_COLOUR)
        y += 18
    if not metrics:
        canvas.text(10, y + 14, "no comparison in this look", 11, fill=NOTE_COLOUR)
        y += 24
    margins = [("margin", "guardrail margin")] if any(view.margin_of(m) is not None for m in drawn) else []
    y = _legend(canvas, y + 6, [("cs", "confidence sequence (decides)"), ("ci", "95% interval (descriptive)"),
                                ("mde", "\u00b1MDE (primary)"), *margins])
    canvas.height = y + 6
    return canvas.svg()


def _forest_panel(canvas: Canvas, view: ExperimentView, metric: str, rows: pl.DataFrame, top: float) -> float:
    """Draw one metric's panel from ``top``; return the y where the next one starts."""
    direction, role = view.direction_of(metric), view.role_of(metric)
    arrow = {"increase": "  (better \u2192)", "decrease": "  (\u2190 better)"}.get(direction or "", "")
    canvas.text(10, top + 13, shorten(f"{metric} ({role}; {direction_words(direction)}){arrow}", WIDTH - 20, 11.5),
                11.5, font_weight="bold")
    kept = shown_rows(rows, MAX_ROWS)
    y = top + 20
    if kept.height < rows.height:
        canvas.text(10, y + 10, f"showing {kept.height} of {count(rows.height)} comparisons (the smallest Holm-adjusted "
                    "anytime-valid p); the comparisons table lists every one", 10, fill=NOTE_COLOUR)
        y += 15
    margin = view.margin_of(metric)
    harmful = (margin if direction == "decrease" else -margin) if margin is not None else None
    figures = [v for col in ("cs_low", "cs_high", "ci_low", "ci_high", "difference") for v in kept.get_column(col).to_list()]
    low, high, mde_on_axis = _limits(figures + ([harmful] if harmful is not None else []),
                                     view.mde if role == "primary" else None)
    axis = Axis(low, high, LABEL_WIDTH + 10, WIDTH - 20)
    bottom = y + kept.height * ROW_HEIGHT
    if role == "primary":
        band = (axis.x(-view.mde), axis.x(view.mde)) if mde_on_axis else (axis.start, axis.end)
        canvas.rect(band[0], y, band[1] - band[0], bottom - y, fill=MDE_COLOUR, class_="mde")
    _x_axis(canvas, axis, y, bottom)
    if harmful is not None and finite(harmful):
        canvas.line(axis.x(harmful), y, axis.x(harmful), bottom, stroke=MARGIN_COLOUR, stroke_dasharray="4 3",
                    class_="margin")
    for i, r in enumerate(kept.iter_rows(named=True)):
        _forest_row(canvas, axis, r, y + i * ROW_HEIGHT + ROW_HEIGHT / 2)
    notes = []
    if role == "primary" and not mde_on_axis:
        notes.append(f"\u00b1MDE ({number(view.mde)}) lies beyond the axis: the grey band covers all of it")
    if notes:
        canvas.text(LABEL_WIDTH + 10, bottom + 30, shorten("; ".join(notes), WIDTH - LABEL_WIDTH - 30, 10), 10, fill=NOTE_COLOUR)
        bottom += 13
    return bottom + 36


def _forest_row(canvas: Canvas, axis: Axis, r: dict, yc: float) -> None:
    canvas.text(10, yc + 4, shorten(f"{r['treatment_arm']} vs {r['control_arm']}", LABEL_WIDTH - 10, 10.5), 10.5)
    if finite(r["cs_low"], r["cs_high"]):
        x0, x1 = axis.x(r["cs_low"]), axis.x(r["cs_high"])
        canvas.rect(x0, yc - 5, max(x1 - x0, 1.5), 10, fill=CS_COLOUR, fill_opacity=0.55, class_="cs")
    else:
        canvas.text((axis.start + axis.end) / 2, yc - 6, "confidence sequence not computed", 9.5, "middle", fill=CS_COLOUR)
    if finite(r["ci_low"], r["ci_high"]):
        x0, x1 = axis.x(r["ci_low"]), axis.x(r["ci_high"])
        canvas.line(x0, yc, x1, yc, stroke=CI_COLOUR, stroke_width=1.4, class_="ci")
        for x in (x0, x1):
            canvas.line(x, yc - 4, x, yc + 4, stroke=CI_COLOUR, stroke_width=1.4)
    if finite(r["difference"]):
        canvas.circle(axis.x(r["difference"]), yc, 3, fill=CI_COLOUR, class_="difference")


def _x_axis(canvas: Canvas, axis: Axis, top: float, bottom: float) -> None:
    """Vertical grid lines at the ticks, zero in black, tick labels under ``bottom``."""
    for tick in axis.ticks(6):
        x = axis.x(tick)
        canvas.line(x, top, x, bottom, stroke=GRID_COLOUR)
        canvas.text(x, bottom + 13, number(tick), 9.5, "middle", fill="#444444")
    if axis.low <= 0 <= axis.high:
        canvas.line(axis.x(0.0), top - 2, axis.x(0.0), bottom + 2, stroke="black", stroke_width=0.9, class_="zero")


def _legend(canvas: Canvas, y: float, items: list[tuple[str, str]]) -> float:
    """One line of swatches and labels at ``y``; returns the y below it."""
    x = 10.0
    for kind, label in items:
        if kind == "cs":
            canvas.rect(x, y + 2, 18, 8, fill=CS_COLOUR, fill_opacity=0.55)
        elif kind in ("ci", "difference"):
            canvas.line(x, y + 6, x + 18, y + 6, stroke=CI_COLOUR, stroke_width=1.4)
            canvas.circle(x + 9, y + 6, 2.5, fill=CI_COLOUR)
        elif kind == "mde":
            canvas.rect(x, y + 1, 18, 10, fill=MDE_COLOUR)
        else:
            canvas.line(x + 9, y, x + 9, y + 12, stroke=MARGIN_COLOUR, stroke_dasharray="4 3")
        canvas.text(x + 23, y + 10, label, 10)
        x += 23 + len(label) * 10 * 0.56 + 16
    return y + 16


_HISTORY_COLUMNS = ["as_of", "treatment_arm", "cs_low", "cs_high", "ci_low", "ci_high", "difference", "n_control",
                    "information_fraction"]


def look_history(view: ExperimentView) -> bytes:
    """SVG of the primary comparisons over looks: difference, confidence sequence and 95% interval."""
    history = view.history
    latest = shown_rows(view.primary, MAX_PANELS)
    arms = latest.get_column("treatment_arm").to_list() if latest.height else []
    canvas = Canvas(WIDTH, 0, f"look history of {view.experiment_id}")
    looks = view.looks
    canvas.text(10, 18, shorten(f"{view.experiment_id}: {view.primary_metric} over {looks} look{'s' if looks != 1 else ''} "
                                f"({direction_words(view.direction_of(view.primary_metric))})", WIDTH - 20, 12.5),
                12.5, font_weight="bold")
    y = 28.0
    if view.primary.height > len(arms):
        canvas.text(10, y + 10, f"showing {len(arms)} of {count(view.primary.height)} comparisons (the smallest "
                    "Holm-adjusted anytime-valid p)", 10, fill=NOTE_COLOUR)
        y += 15
    drawn = history.select(_HISTORY_COLUMNS).filter(pl.col("treatment_arm").is_in(arms)) if arms else history
    panels = drawn.partition_by("treatment_arm", as_dict=True) if arms else {}
    for arm in arms:
        y = _history_panel(canvas, view, arm, panels[(arm,)].sort("as_of"), y)
    if not arms:
        canvas.text(10, y + 14, "no look of the primary metric yet", 11, fill=NOTE_COLOUR)
        y += 24
    y = _legend(canvas, y + 4, [("cs", "confidence sequence (decides)"), ("difference", "difference, 95% interval"),
                                ("mde", "\u00b1MDE")])
    canvas.height = y + 6
    return canvas.svg()


def _history_panel(canvas: Canvas, view: ExperimentView, arm: str, rows: pl.DataFrame, top: float) -> float:
    """Draw one comparison's history from ``top``; return the y where the next panel starts."""
    planned = view.planned_per_arm
    n_last = rows.get_column("n_control").to_list()[-1] if rows.height else None
    if planned and finite(planned) and n_last is not None:
        reached = rows.get_column("information_fraction").to_list()[-1]
        note = f"{plan_reached(reached)} of the plan reached (control units {count(n_last)}, {count(planned)} planned per arm)"
    else:
        note = "planned sample: " + (view.plan_reason or "not reachable")
    canvas.text(10, top + 13, shorten(f"{arm} vs {view.control_arm}: {note}", WIDTH - 20, 11), 11)
    days = [d.toordinal() for d in rows.get_column("as_of").to_list()]
    cs_low, cs_high = rows.get_column("cs_low").to_list(), rows.get_column("cs_high").to_list()
    ci_low, ci_high = rows.get_column("ci_low").to_list(), rows.get_column("ci_high").to_list()
    diff = rows.get_column("difference").to_list()
    low, high, mde_on_axis = _limits(_history_span(cs_low, cs_high, diff), view.mde)
    y_axis = Axis(low, high, top + 120, top + 22)
    first, last = (min(days), max(days)) if days else (0, 0)
    x_axis = Axis(first - (3 if first == last else 0), last + (3 if first == last else 0), 75, WIDTH - 45)
    band = (y_axis.x(view.mde), y_axis.x(-view.mde)) if mde_on_axis else (y_axis.end, y_axis.start)
    canvas.rect(x_axis.start, band[0], x_axis.end - x_axis.start, band[1] - band[0], fill=MDE_COLOUR, class_="mde")
    _y_axis(canvas, y_axis, x_axis)
    _date_ticks(canvas, x_axis, sorted(set(days)), y_axis.start)
    ok = [i for i in range(len(days)) if finite(cs_low[i], cs_high[i])]
    if len(ok) > 1:
        points = [(x_axis.x(days[i]), y_axis.x(cs_high[i])) for i in ok] + [(x_axis.x(days[i]), y_axis.x(cs_low[i]))
                                                                             for i in reversed(ok)]
        canvas.polygon(points, fill=CS_COLOUR, fill_opacity=0.3, class_="cs")
    for i in ok if len(ok) == 1 else []:
        x = x_axis.x(days[i])
        canvas.rect(x - 4, y_axis.x(cs_high[i]), 8, y_axis.x(cs_low[i]) - y_axis.x(cs_high[i]), fill=CS_COLOUR,
                    fill_opacity=0.45, class_="cs")
    step = -(-len(days) // MAX_POINTS) or 1
    for i in range(len(days) - 1, -1, -step):  # the latest look always drawn
        x = x_axis.x(days[i])
        if finite(ci_low[i], ci_high[i]):
            canvas.line(x, y_axis.x(ci_low[i]), x, y_axis.x(ci_high[i]), stroke=CI_COLOUR, class_="ci")
        if finite(diff[i]):
            canvas.circle(x, y_axis.x(diff[i]), 2.2, fill=CI_COLOUR, class_="difference")
    if not mde_on_axis:
        canvas.text(x_axis.start + 4, top + 33, f"\u00b1MDE ({number(view.mde)}) lies beyond the axis", 9.5, fill=NOTE_COLOUR)
    return top + 146


def _history_span(cs_low: list, cs_high: list, diff: list) -> list[float]:
    """The figures the history's y axis is fitted to: every difference and the latest confidence sequence
    widened by its own width on each side, so the narrowing shows; the wide sequences of the first looks
    run off the edge rather than flatten the rest."""
    latest = [(lo, hi) for lo, hi in zip(cs_low, cs_high) if finite(lo, hi)]
    span = [v for v in diff if finite(v)]
    if latest:
        lo, hi = latest[-1]
        width = hi / 2 - lo / 2
        span += [lo - width, hi + width]
    return span


def _y_axis(canvas: Canvas, y_axis: Axis, x_axis: Axis) -> None:
    for tick in y_axis.ticks(5):
        y = y_axis.x(tick)
        canvas.line(x_axis.start, y, x_axis.end, y, stroke=GRID_COLOUR)
        canvas.text(x_axis.start - 5, y + 3.5, number(tick), 9.5, "end", fill="#444444")
    if y_axis.low <= 0 <= y_axis.high:
        canvas.line(x_axis.start, y_axis.x(0.0), x_axis.end, y_axis.x(0.0), stroke="black", stroke_width=0.9, class_="zero")


def _date_ticks(canvas: Canvas, x_axis: Axis, days: list[int], baseline: float) -> None:
    """The first and the last look day and up to four days evenly between them, as tick labels under
    ``baseline`` (spread in time, so that labels never overlap)."""
    if not days:
        return
    first, last = days[0], days[-1]
    picks = sorted({round(first + i * (last - first) / 5) for i in range(6)}) if last - first >= 5 else days[:6]
    for day in picks:
        x = x_axis.x(day)
        canvas.line(x, baseline, x, baseline + 4, stroke="#444444")
        canvas.text(x, baseline + 15, dt.date.fromordinal(day).isoformat(), 9.5, "middle", fill="#444444")


@functools.cache
def _code_fingerprint() -> str:
    """What else a plot depends on: the code of this module, of the SVG canvas, of the view and of its formatting,
    and the polars version."""
    import hashlib
    import inspect

    from zcl_assets.reports import experiments, formatting, svg

    digest = hashlib.sha256(pl.__version__.encode())  # view_fingerprint's row hashes are stable within a version
    for module in (inspect.getmodule(_limits), svg, experiments, formatting):
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()


_NOT_DRAWN = ("analysed_at",)  # when a look was computed: it changes with every run and no plot shows it


def view_fingerprint(view: ExperimentView) -> str:
    """SHA-256 (hex) of everything a view holds (registration, look day, counts, every frame's schema,
    height and row hashes, less :data:`_NOT_DRAWN`) and of the plotting code: two views with the same
    fingerprint draw the same plots.

    A frame enters as polars' 64-bit hash of each row (``hash_rows`` with a fixed seed: a quarter of
    the cost of writing it as CSV). Those hashes are stable within one polars version, which is why
    the version is part of :func:`_code_fingerprint`."""
    import hashlib
    import json

    digest = hashlib.sha256(_code_fingerprint().encode())
    fields = {"registration": view.registration, "as_of": view.as_of, "looks": view.looks, "sessions": view.sessions,
              "verified_sessions": view.verified_sessions, "first_assigned_at": view.first_assigned_at,
              "assigned_units": view.assigned_units}
    digest.update(json.dumps(fields, sort_keys=True, default=str).encode())
    for frame in (view.comparisons, view.history, view.quarantine):
        frame = frame.drop(_NOT_DRAWN, strict=False)
        digest.update(f"{frame.schema}|{frame.height}|".encode())
        if frame.width:
            digest.update(frame.hash_rows(seed=0).to_numpy().tobytes())
    return digest.hexdigest()


def _cache_name(experiment_id: str) -> str:
    """A file-name-safe name of an experiment that two ids never share (``a.b`` and ``a_b``
    differ in the SHA-256 of the id they end with)."""
    import hashlib

    from zcl_assets.importers.landing_writer import safe_name

    return f"{safe_name(experiment_id)[:60]}-{hashlib.sha256(experiment_id.encode()).hexdigest()[:12]}"


def whole_svg(data: bytes) -> bool:
    """An SVG document from its opening tag to its closing one (a kept file cut short or replaced is drawn again)."""
    return data.startswith(b"<svg ") and data.endswith(b"</svg>")


class PlotCache:
    """A folder of kept plot pairs (one pair per experiment), listed once when first asked:
    a night that draws a thousand experiments lists the folder once, not once per experiment."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        self._kept: dict[str, list[Path]] | None = None

    def kept(self, experiment: str) -> list[Path]:
        """The files kept for the experiment named ``experiment`` (:func:`_cache_name`)."""
        if self._kept is None:
            self._kept = {}
            try:
                names = [e.name for e in os.scandir(self.folder)]
            except OSError:  # no folder yet
                names = []
            for name in names:
                if name.endswith((".svg", ".png")):
                    self._kept.setdefault(name.split(".")[0], []).append(self.folder / name)
        return self._kept.get(experiment, [])

    def replace(self, experiment: str, pair: list[Path]) -> None:
        """Record that ``pair`` is now the experiment's only kept files."""
        self.kept(experiment)
        self._kept[experiment] = pair


def plots(view: ExperimentView, cache: PlotCache | str | os.PathLike[str] | None = None) -> tuple[bytes, bytes]:
    """``(forest_plot(view), look_history(view))`` as SVG bytes.

    With ``cache`` (a :class:`PlotCache`, or its folder), a pair drawn before from a view with the
    same :func:`view_fingerprint` is read back from ``<folder>/<experiment name>.<fingerprint>.forest.svg``
    (and ``.history.svg``) instead of being drawn again, so an experiment with no new data keeps its
    plots; a newly drawn pair replaces the experiment's earlier pair there, so the folder holds
    one pair per experiment. A kept file that is not a whole SVG is drawn again; a folder that
    cannot be written to only means nothing is kept.
    """
    if cache is None:
        return forest_plot(view), look_history(view)
    cache = cache if isinstance(cache, PlotCache) else PlotCache(cache)
    folder = cache.folder
    experiment = _cache_name(view.experiment_id)
    stem = f"{experiment}.{view_fingerprint(view)[:32]}"
    forest, history = folder / f"{stem}.forest.svg", folder / f"{stem}.history.svg"
    try:
        kept = forest.read_bytes(), history.read_bytes()
        if all(whole_svg(data) for data in kept):
            return kept
    except OSError:
        pass
    drawn = forest_plot(view), look_history(view)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in cache.kept(experiment):
            if old.name.split(".")[-3] != stem.rsplit(".", 1)[1]:
                old.unlink(missing_ok=True)
        for path, data in ((forest, drawn[0]), (history, drawn[1])):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)  # a reader never sees half a file
        cache.replace(experiment, [forest, history])
    except OSError:  # a folder the reader may not write to: the plots are drawn, only not kept
        pass
    return drawn
