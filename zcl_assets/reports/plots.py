"""The two plots of an experiment, drawn with matplotlib and returned as small PNG files.

- :func:`forest_plot`: one panel per metric, one row per treatment arm: the deciding confidence
  sequence as a thick bar, the descriptive 95% interval as a thin bar, the difference as a
  dot, against zero, the primary metric's band of plus or minus the MDE (where ``no_effect``
  can be read) and a guardrail's non-inferiority margin.
- :func:`look_history`: the primary comparisons over looks: the confidence sequence as a
  band that narrows as units accrue toward the planned sample.

Both return PNG bytes (palette-quantized, typically 10-30 kB) so that pages that embed them
as ``data:`` URIs stay small enough to mail.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import math
import os
from pathlib import Path

import matplotlib.dates as mdates
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from PIL import Image

from zcl_assets.reports.experiments import ExperimentView
from zcl_assets.reports.formatting import direction_words

CS_COLOUR = "#1f5fa8"
CI_COLOUR = "#333333"
MDE_COLOUR = "#d9d9d9"
GOOD_COLOUR = "#e8f4e8"
MARGIN_COLOUR = "#c0392b"
DPI = 100


def _finite(*values: object) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _png(fig: Figure) -> bytes:
    """The figure as a palette PNG (a ``Figure`` without pyplot: no global state, no display)."""
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=DPI)
    raw.seek(0)
    image = Image.open(raw).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def forest_plot(view: ExperimentView) -> bytes:
    """PNG of every metric's comparisons of the latest look (see the module docstring)."""
    metrics = view.comparisons.get_column("metric").unique(maintain_order=True).to_list()
    rows_per_metric = [view.comparisons.filter(pl.col("metric") == m).height for m in metrics]
    heights = [0.55 + 0.38 * n for n in rows_per_metric]
    fig = Figure(figsize=(7.2, 0.55 + sum(heights)))
    axes = fig.subplots(len(metrics), 1, squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, metric in zip(axes[:, 0], metrics):
        _forest_panel(ax, view, metric, view.comparisons.filter(pl.col("metric") == metric))
    handles = [
        Line2D([], [], color=CS_COLOUR, lw=6, label="confidence sequence (decides)"),
        Line2D([], [], color=CI_COLOUR, lw=1.4, label="95% interval (descriptive)"),
        Rectangle((0, 0), 1, 1, color=MDE_COLOUR, label="\u00b1MDE (primary)"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, fontsize=8)
    fig.suptitle(f"{view.experiment_id}: difference treatment \u2212 control, look of {view.as_of}", fontsize=9.5)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97), h_pad=0.6)
    return _png(fig)


def _forest_panel(ax: Axes, view: ExperimentView, metric: str, rows: pl.DataFrame) -> None:
    direction = view.direction_of(metric)
    role = view.role_of(metric)
    labels = [f"{r['treatment_arm']} vs {r['control_arm']}" for r in rows.iter_rows(named=True)]
    ys = list(range(len(labels)))[::-1]
    spans = [0.0]
    if role == "primary":
        ax.axvspan(-view.mde, view.mde, color=MDE_COLOUR, zorder=0)
        spans += [-view.mde, view.mde]
    margin = view.margin_of(metric)
    if margin is not None:
        harmful = margin if direction == "decrease" else -margin
        ax.axvline(harmful, color=MARGIN_COLOUR, ls="--", lw=1)
        ax.annotate("guardrail margin", xy=(harmful, 1), xycoords=("data", "axes fraction"), xytext=(3, -9),
                    textcoords="offset points", color=MARGIN_COLOUR, fontsize=7, ha="left")
        spans.append(harmful)
    ax.axvline(0, color="black", lw=0.8)
    for y, r in zip(ys, rows.iter_rows(named=True)):
        if _finite(r["cs_low"], r["cs_high"]):
            ax.plot([r["cs_low"], r["cs_high"]], [y, y], color=CS_COLOUR, lw=6, solid_capstyle="butt", alpha=0.55)
            spans += [r["cs_low"], r["cs_high"]]
        else:
            ax.annotate("confidence sequence not computed", (0, y + 0.22), fontsize=7, color=CS_COLOUR, ha="center")
        if _finite(r["ci_low"], r["ci_high"]):
            ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=CI_COLOUR, lw=1.4, marker="|", ms=8)
            spans += [r["ci_low"], r["ci_high"]]
        if _finite(r["difference"]):
            ax.plot([r["difference"]], [y], "o", color=CI_COLOUR, ms=4)
            spans.append(r["difference"])
    low, high = min(spans), max(spans)
    pad = (high - low) * 0.08 or 1e-3
    ax.set_xlim(low - pad, high + pad)
    ax.set_ylim(-0.7, max(ys) + 0.7)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.tick_params(axis="x", labelsize=7.5)
    arrow = {"increase": "  (better \u2192)", "decrease": "  (\u2190 better)"}.get(direction or "", "")
    ax.set_title(f"{metric} ({role}; {direction_words(direction)}){arrow}", fontsize=8.5, loc="left")
    ax.grid(axis="x", color="#eeeeee", lw=0.6)


def look_history(view: ExperimentView) -> bytes:
    """PNG of the primary comparisons over looks: difference, confidence sequence and 95% interval."""
    history = view.history
    arms = history.get_column("treatment_arm").unique(maintain_order=True).to_list() or [None]
    fig = Figure(figsize=(7.2, 0.6 + 1.9 * len(arms)))
    axes = fig.subplots(len(arms), 1, squeeze=False, sharex=True)
    for ax, arm in zip(axes[:, 0], arms):
        rows = history.filter(pl.col("treatment_arm") == arm) if arm else history
        _history_panel(ax, view, arm, rows)
    axes[-1, 0].xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False, fontsize=8)
    fig.autofmt_xdate(rotation=0, ha="center")
    looks = view.looks
    fig.suptitle(
        f"{view.experiment_id}: {view.primary_metric} over {looks} look{'s' if looks != 1 else ''} "
        f"({direction_words(view.direction_of(view.primary_metric))})",
        fontsize=9.5,
    )
    fig.tight_layout(rect=(0, 0.07 if len(arms) == 1 else 0.04, 1, 0.95))
    return _png(fig)


def _history_panel(ax: Axes, view: ExperimentView, arm: str | None, rows: pl.DataFrame) -> None:
    days = rows.get_column("as_of").to_list()
    ax.axhspan(-view.mde, view.mde, color=MDE_COLOUR, zorder=0, label="\u00b1MDE")
    ax.axhline(0, color="black", lw=0.8)
    cs_low, cs_high = rows.get_column("cs_low").to_list(), rows.get_column("cs_high").to_list()
    ci_low, ci_high = rows.get_column("ci_low").to_list(), rows.get_column("ci_high").to_list()
    diff = rows.get_column("difference").to_list()
    ok = [i for i in range(len(days)) if _finite(cs_low[i], cs_high[i])]
    if len(ok) > 1:
        ax.fill_between([days[i] for i in ok], [cs_low[i] for i in ok], [cs_high[i] for i in ok],
                        color=CS_COLOUR, alpha=0.3, lw=0, label="confidence sequence (decides)")
    for i in ok if len(ok) == 1 else []:
        ax.plot([days[i], days[i]], [cs_low[i], cs_high[i]], color=CS_COLOUR, lw=8, alpha=0.45,
                solid_capstyle="butt", label="confidence sequence (decides)")
    ci_ok = [i for i in range(len(days)) if _finite(ci_low[i], ci_high[i])]
    ax.errorbar([days[i] for i in ci_ok], [diff[i] for i in ci_ok],
                yerr=[[diff[i] - ci_low[i] for i in ci_ok], [ci_high[i] - diff[i] for i in ci_ok]],
                fmt="o", color=CI_COLOUR, ms=3, lw=1, capsize=2, label="difference, 95% interval (descriptive)")
    planned = view.planned_per_arm
    n_last = rows.get_column("n_control").to_list()[-1] if rows.height else None
    if planned and math.isfinite(planned) and n_last is not None:
        note = f"control units {n_last:,} of {planned:,.0f} planned ({n_last / planned:.0%})"
    else:
        note = "planned sample: " + (view.plan_reason or "not reachable")
    ax.set_title(f"{arm} vs {view.control_arm}: {note}" if arm else note, fontsize=8.5, loc="left")
    ax.tick_params(labelsize=7.5)
    ax.grid(axis="y", color="#eeeeee", lw=0.6)
    if len(days) == 1:
        ax.set_xlim(days[0] - dt.timedelta(days=3), days[0] + dt.timedelta(days=3))


@functools.cache
def _code_fingerprint() -> str:
    """What else a plot depends on: the code of this module, of the view and of its formatting, and the
    versions of matplotlib and Pillow."""
    import hashlib
    import inspect

    import matplotlib
    import PIL

    from zcl_assets.reports import experiments, formatting

    digest = hashlib.sha256(f"{matplotlib.__version__} {PIL.__version__}".encode())
    for module in (inspect.getmodule(_finite), experiments, formatting):
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()


_NOT_DRAWN = ("analysed_at",)  # when a look was computed: it changes with every run and no plot shows it


def view_fingerprint(view: ExperimentView) -> str:
    """SHA-256 (hex) of everything a view holds (registration, look day, counts, every frame as CSV with
    its schema, less :data:`_NOT_DRAWN`) and of the plotting code: two views with the same fingerprint
    draw the same plots."""
    import hashlib
    import json

    digest = hashlib.sha256(_code_fingerprint().encode())
    fields = {"registration": view.registration, "as_of": view.as_of, "looks": view.looks, "sessions": view.sessions,
              "verified_sessions": view.verified_sessions, "first_assigned_at": view.first_assigned_at,
              "assigned_units": view.assigned_units}
    digest.update(json.dumps(fields, sort_keys=True, default=str).encode())
    for frame in (view.comparisons, view.history, view.quarantine):
        frame = frame.drop(_NOT_DRAWN, strict=False)
        digest.update(str(frame.schema).encode())
        digest.update(frame.write_csv().encode())
    return digest.hexdigest()


def _cache_name(experiment_id: str) -> str:
    """A file-name-safe name of an experiment that two ids never share (``a.b`` and ``a_b``
    differ in the SHA-256 of the id they end with)."""
    import hashlib

    from zcl_assets.importers.landing_writer import safe_name

    return f"{safe_name(experiment_id)[:60]}-{hashlib.sha256(experiment_id.encode()).hexdigest()[:12]}"


def _whole_png(data: bytes) -> bool:
    """A PNG file from its signature to its end chunk (a kept file cut short or replaced is drawn again)."""
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")


def plots(view: ExperimentView, cache_dir: str | os.PathLike[str] | None = None) -> tuple[bytes, bytes]:
    """``(forest_plot(view), look_history(view))`` as PNG bytes.

    With ``cache_dir``, a pair drawn before from a view with the same :func:`view_fingerprint`
    is read back from ``<cache_dir>/<experiment name>.<fingerprint>.forest.png`` (and
    ``.history.png``) instead of being drawn again (about 0.3 s a pair); a newly drawn pair
    replaces the experiment's earlier pair there, so the folder holds one pair per experiment.
    A kept file that is not a whole PNG is drawn again; a folder that cannot be written to only
    means nothing is kept.
    """
    if cache_dir is None:
        return forest_plot(view), look_history(view)
    folder = Path(cache_dir)
    experiment = _cache_name(view.experiment_id)
    stem = f"{experiment}.{view_fingerprint(view)[:32]}"
    forest, history = folder / f"{stem}.forest.png", folder / f"{stem}.history.png"
    try:
        kept = forest.read_bytes(), history.read_bytes()
        if all(_whole_png(data) for data in kept):
            return kept
    except OSError:
        pass
    drawn = forest_plot(view), look_history(view)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"{experiment}.*.png"):
            if old.name.split(".")[-3] != stem.rsplit(".", 1)[1]:
                old.unlink(missing_ok=True)
        for path, data in ((forest, drawn[0]), (history, drawn[1])):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)  # a reader never sees half a file
    except OSError:  # a folder the reader may not write to: the plots are drawn, only not kept
        pass
    return drawn
