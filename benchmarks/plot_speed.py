"""What a plot of the report costs, by renderer, and what the night's plots cost with the cache.

The report draws two plots per experiment every night (a forest plot and the look history). The
budget is 20 ms a plot. This script times, in one run and on the same views:

- ``svg``: the report's renderer (``zcl_assets/reports/plots.py``, SVG written directly);
- ``matplotlib, a figure per plot``: the renderer the report used before (a new ``Figure`` per plot,
  Agg, PNG, palette-quantized with Pillow), drawing the same marks;
- ``matplotlib, one reused figure``: the same marks on one figure cleared between plots, PNG without
  quantizing (the cheapest use of matplotlib);

on a two-arm experiment, a three-arm one and a registration of 1,000 arms (the report draws at most 12
comparisons a metric and 4 history panels; matplotlib is given the same capped rows), then the whole
night: every experiment's pair drawn cold, and read back from the plot cache (``data/reports/plots``)
when nothing changed. A Vega-Lite spec rendered without a browser (``vl-convert``) is not measured: it
is not a dependency of the project, and a renderer that embeds a JavaScript engine starts at tens of
milliseconds a chart.

Views come from a warehouse (``--warehouse``, default ``data/warehouse.duckdb`` after ``make run``).
Run: ``python benchmarks/plot_speed.py [--warehouse FILE] [--repeat 20]``; prints milliseconds a plot
(median and minimum of the repeats) and the load average, since the machine is shared.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zcl_assets.reports.experiments import ExperimentView, load_views  # noqa: E402
from zcl_assets.reports.plots import MAX_PANELS, MAX_ROWS, forest_plot, look_history, plots, shown_rows  # noqa: E402


def _timed(draw, view: ExperimentView, repeat: int) -> tuple[float, float]:
    draw(view)  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        draw(view)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), min(times)


def wide(view: ExperimentView, arms: int = 1000) -> ExperimentView:
    """``view`` with its first primary comparison copied to ``arms`` treatment arms, every look too (in one
    chunk per column, as a frame read from DuckDB is)."""
    first = view.primary.head(1)
    rows = pl.concat([first.with_columns(treatment_arm=pl.lit(f"arm-{i:04d}")) for i in range(arms)], rechunk=True)
    history = view.history.filter(pl.col("treatment_arm") == first.get_column("treatment_arm")[0])
    looks = pl.concat([history.with_columns(treatment_arm=pl.lit(f"arm-{i:04d}")) for i in range(arms)], rechunk=True)
    return dataclasses.replace(view, comparisons=rows, history=looks)


class Matplotlib:
    """The same marks drawn with matplotlib: a new figure per plot, or one figure reused."""

    def __init__(self, reuse: bool):
        from matplotlib.figure import Figure

        self.reuse, self.figure_type, self.figure = reuse, Figure, None

    def _figure(self, height: float):
        if not self.reuse:
            return self.figure_type(figsize=(7.2, height))
        if self.figure is None:
            self.figure = self.figure_type(figsize=(7.2, 4.0))
        self.figure.clear()
        self.figure.set_size_inches(7.2, height)
        return self.figure

    def _png(self, fig) -> bytes:
        raw = io.BytesIO()
        fig.savefig(raw, format="png", dpi=100)
        if self.reuse:
            return raw.getvalue()
        from PIL import Image

        raw.seek(0)
        image = Image.open(raw).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        return out.getvalue()

    def forest(self, view: ExperimentView) -> bytes:
        metrics = view.comparisons.get_column("metric").unique(maintain_order=True).to_list()[:8]
        panels = [shown_rows(view.comparisons.filter(pl.col("metric") == m), MAX_ROWS) for m in metrics]
        fig = self._figure(0.6 + sum(0.55 + 0.38 * p.height for p in panels))
        axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
        for ax, metric, rows in zip(axes, metrics, panels):
            ys = list(range(rows.height))[::-1]
            ax.axvspan(-view.mde, view.mde, color="#e3e3e3", zorder=0)
            ax.axvline(0, color="black", lw=0.8)
            for y, r in zip(ys, rows.iter_rows(named=True)):
                ax.plot([r["cs_low"], r["cs_high"]], [y, y], color="#1f5fa8", lw=6, alpha=0.55, solid_capstyle="butt")
                ax.plot([r["ci_low"], r["ci_high"]], [y, y], color="#333333", lw=1.4, marker="|", ms=8)
                ax.plot([r["difference"]], [y], "o", color="#333333", ms=4)
            ax.set_yticks(ys, [f"{r['treatment_arm']} vs {r['control_arm']}" for r in rows.iter_rows(named=True)], fontsize=8)
            ax.set_title(metric, fontsize=8.5, loc="left")
        fig.suptitle(f"{view.experiment_id}: look of {view.as_of}", fontsize=9.5)
        fig.tight_layout()
        return self._png(fig)

    def history(self, view: ExperimentView) -> bytes:
        arms = shown_rows(view.primary, MAX_PANELS).get_column("treatment_arm").to_list()
        fig = self._figure(0.6 + 1.9 * len(arms))
        axes = fig.subplots(len(arms), 1, squeeze=False, sharex=True)[:, 0]
        for ax, arm in zip(axes, arms):
            rows = view.history.filter(pl.col("treatment_arm") == arm).drop_nulls(["cs_low", "ci_low"])
            days = rows.get_column("as_of").to_list()
            ax.axhspan(-view.mde, view.mde, color="#e3e3e3", zorder=0)
            ax.fill_between(days, rows.get_column("cs_low").to_list(), rows.get_column("cs_high").to_list(), alpha=0.3)
            diff = rows.get_column("difference").to_numpy()
            ax.errorbar(days, diff, yerr=[diff - rows.get_column("ci_low").to_numpy(), rows.get_column("ci_high").to_numpy() - diff],
                        fmt="o", ms=3, lw=1, capsize=2)
            ax.set_title(f"{arm} vs {view.control_arm}", fontsize=8.5, loc="left")
        fig.tight_layout()
        return self._png(fig)


def _row(label: str, timed: tuple[float, float]) -> str:
    return f"  {label:<44} {timed[0]:8.1f} {timed[1]:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", default=str(Path(__file__).resolve().parents[1] / "data" / "warehouse.duckdb"))
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    if not Path(args.warehouse).exists():
        sys.exit(f"no warehouse at {args.warehouse}: run `make run` first, or pass --warehouse")
    with duckdb.connect(args.warehouse, read_only=True) as con:
        views = load_views(con)
    by_arms = sorted(views, key=lambda v: (v.primary.height, -v.looks))
    two = next(v for v in by_arms if v.primary.height == 1 and v.is_own)
    three = next((v for v in by_arms if v.primary.height == 2), two)
    cases = [(f"2 arms, {two.looks} looks ({two.experiment_id})", two),
             (f"3 arms, {three.looks} looks ({three.experiment_id})", three),
             (f"1,001 arms, {two.looks} looks (copies of {two.experiment_id})", wide(two))]
    renderers = [("svg", forest_plot, look_history)]
    try:
        for reuse in (False, True):
            drawer = Matplotlib(reuse)
            renderers.append((f"matplotlib, {'one reused figure' if reuse else 'a figure per plot'}", drawer.forest, drawer.history))
    except ImportError:
        print("matplotlib is not installed: only the SVG renderer is timed")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.repeat} repeats; ms a plot")
    print(f"  {'case, renderer, plot':<44} {'median':>8} {'min':>8}")
    for label, view in cases:
        print(label)
        for name, forest, history in renderers:
            print(_row(f"{name}: forest plot", _timed(forest, view, args.repeat)))
            print(_row(f"{name}: look history", _timed(history, view, args.repeat)))
    _night(views)


def _night(views: list[ExperimentView]) -> None:
    """Every experiment's pair drawn cold into an empty cache, then read back from it (no new data)."""
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        for view in views:
            plots(view, cache)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        for view in views:
            plots(view, cache)
        kept = time.perf_counter() - started
        size = sum(p.stat().st_size for p in Path(cache).iterdir())
    print(f"the night's {len(views)} experiments: drawn {cold * 1000:.0f} ms ({cold * 500 / len(views):.1f} ms a plot), "
          f"kept and read back {kept * 1000:.0f} ms; {size / 1024:.0f} kB of plots")


if __name__ == "__main__":
    main()
