"""The text report of ``zcl run`` and ``zcl report``: fits a terminal of :data:`WIDTH` columns.

Layout: a legend naming every method, the alarms by kind (most severe first), then the project's
own (ZCL context) experiments, then imported ones, each group sorted by what needs attention
(invalid, an alarm, decided, continuing: ``reports/alarms.py``). One block per experiment: its
alarms, decision and reason, per-arm figures of the primary metric, every
comparison with its deciding confidence sequence and its descriptive interval and test, each
metric with the direction that is good, SRM, progress to the plan, data quality. Long lines
wrap at spaces, never inside a word (an id longer than a whole line is the only exception).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import polars as pl

from zcl_assets.reports.alarms import LABELS, SEVERITY, SYMBOL
from zcl_assets.reports.experiments import NOT_COMPUTED, ExperimentView
from zcl_assets.reports.formatting import (
    arm_figure,
    comparison_label,
    cuped_sentence,
    direction_words,
    figure_label,
    interval,
    is_binary,
    lift,
    number,
    p_value,
    per_user,
    plan_reached,
    progress_sentence,
    quarantine_sentence,
    signed,
    srm_sentence,
    verified_sentence,
)
from zcl_assets.reports.methods import DECIDING_INTERVAL, method_name

WIDTH = 120
INDENT = "  "


NBSP = "\u00a0"
"""Glues a figure to its label (``CS [a, b]``) so a line never breaks inside it."""


def glue(text: str) -> str:
    return text.replace(" ", NBSP)


def wrap(text: str, indent: str = "", hanging: str = "    ", width: int = WIDTH) -> list[str]:
    """``text`` wrapped at spaces to ``width`` columns, continuation lines indented by ``hanging``.

    Words are never split, unless a single word is longer than a whole line.

    Examples:
        >>> wrap("alpha beta gamma", width=11)
        ['alpha beta', '    gamma']
    """
    wrapper = textwrap.TextWrapper(
        width=width, initial_indent=indent, subsequent_indent=indent + hanging,
        break_long_words=False, break_on_hyphens=False,
    )
    lines = wrapper.wrap(text) or [indent]
    if any(len(line) > width for line in lines):
        wrapper.break_long_words = True
        lines = wrapper.wrap(text)
    return [line.replace(NBSP, " ") for line in lines]


def fit(text: str, width: int = WIDTH) -> str:
    """Pre-formatted ``text`` (another section's lines) fitted to ``width``: a longer line wraps at
    spaces, its continuation indented under it; shorter lines are left as they are.

    Examples:
        >>> print(fit("  one two three", width=12))
          one two
              three
    """
    out: list[str] = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += wrap(line.strip(), indent=indent, width=width)
    return "\n".join(out)


ARROWS = {"increase": "\u2191", "decrease": "\u2193"}
"""Overview marks of the good direction of a primary metric (the legend spells them out)."""

OVERVIEW_COLUMNS = (
    # (header, width, align)
    ("decision", 12, "<"),
    ("experiment", 22, "<"),
    ("arm", 11, "<"),
    ("metric", 15, "<"),
    ("difference", 10, ">"),
    ("CS (decides)", 23, ">"),
    ("plan", 5, ">"),
    ("days", 4, ">"),  # more than 999 days shows as >999
    ("SRM", 8, "<"),
)


def _cell_lines(text: str, width: int) -> list[str]:
    wrapper = textwrap.TextWrapper(width=width, break_long_words=False, break_on_hyphens=True)
    lines = wrapper.wrap(text) or [""]
    if any(len(line) > width for line in lines):
        wrapper.break_long_words = True
        lines = wrapper.wrap(text)
    return lines


def table(rows: Sequence[Sequence[str]], columns=OVERVIEW_COLUMNS) -> list[str]:
    """Fixed-width rows; a cell too long for its column wraps onto more lines of the same row."""
    out = [" ".join(f"{h:{a}{w}}" for h, w, a in columns).rstrip(), " ".join("-" * w for _, w, _ in columns)]
    for row in rows:
        cells = [_cell_lines(str(value), w) for value, (_, w, _) in zip(row, columns)]
        for i in range(max(len(c) for c in cells)):
            out.append(" ".join(
                f"{(c[i] if i < len(c) else ''):{a}{w}}" for c, (_, w, a) in zip(cells, columns)
            ).rstrip())
    return out


def overview_rows(views: Sequence[ExperimentView]) -> list[list[str]]:
    """One row per primary comparison: decision, id, arm, metric with its good direction, CS, plan."""
    rows = []
    for view in views:
        arrow = ARROWS.get(view.registration["direction"], "?")
        for i, r in enumerate(view.primary_rows()):
            plan = r.get("information_fraction")
            mark = f"{SYMBOL} " if view.alarms and i == 0 else ""
            rows.append([
                mark + ((r.get("decision") or view.decision) if i == 0 or r.get("decision") else ""),
                view.experiment_id if i == 0 else "",
                r["treatment_arm"],
                f"{view.primary_metric} {arrow}" if i == 0 else "",
                signed(r["difference"]),
                interval(r["cs_low"], r["cs_high"]),
                plan_reached(plan, "-"),
                ("-" if view.days_left is None or view.stalled_since else ">999" if view.days_left > 999
                 else f"{view.days_left:.0f}"),
                view.srm_status if i == 0 else "",
            ])
    return rows


def render_report(
    views: Sequence[ExperimentView], details: Sequence[str] | None = None, all_metrics: bool = False, title: str | None = None
) -> str:
    """The whole report: legend, an overview line per primary comparison, then detail blocks.

    Args:
        views: the experiments, in the order to show (``load_views`` sorts them).
        details: ids of the experiments that get a detail block; None means the project's own
            experiments, or every experiment when there are at most 10.
        all_metrics: detail blocks also show metrics that are neither primary nor guardrail.
        title: first line; default names the looks shown.
    """
    own = [v for v in views if v.is_own]
    imported = [v for v in views if not v.is_own]
    if details is None:
        details = [v.experiment_id for v in (views if len(views) <= 10 else own)]
    days = sorted({v.as_of for v in views})
    lines = wrap(title or (
        f"Latest look of {len(views)} experiment{'s' if len(views) != 1 else ''} "
        f"(looks of {days[0]}" + (f" to {days[-1]}" if len(days) > 1 else "") + ")"
    ))
    lines += wrap(
        "How to read: CS = " + method_name(DECIDING_INTERVAL, cite=True)
        + ", the interval that decides, valid at every nightly look; 95% CI and p are descriptive, fixed-horizon "
        "figures, each followed by its "
        "method; differences are treatment minus control (the arm named) in the metric's units; \u2191 higher is "
        "better, \u2193 lower is better; plan = share of the planned sample reached; days = days left to reach it at "
        "current traffic (>999: not within three years; -: none, for a stalled experiment at zero traffic)."
    )
    lines += alarm_lines(views)
    groups = [
        ("ZCL context experiments (order, inclusion, memory mode)", own),
        ("Imported experiments (registered by `zcl import`)", imported),
    ]
    for heading, group in groups:
        if group:
            lines += ["", f"{heading}: {len(group)}, what needs attention first", *table(overview_rows(group))]
    shown = [v for v in views if v.experiment_id in set(details)]
    if shown:
        lines += ["", "Details", "======="]
        for view in shown:
            try:
                block = render_experiment(view, all_metrics=all_metrics)
            except Exception as exc:  # noqa: BLE001 - one experiment's block never takes the report down
                block = wrap(f"{view.experiment_id} [REPORT FAILED] {SYMBOL} this block could not be written: "
                             f"{type(exc).__name__}: {exc}")
            lines += [""] + block
    rest = len(views) - len(shown)
    if rest:
        lines += [""] + wrap(
            f"{rest} experiment{'s' if rest != 1 else ''} without details here: zcl report --experiment ID "
            "(or --org ID) shows them; zcl report --html FILE writes every experiment with its plots."
        )
    return "\n".join(lines)


def alarm_lines(views: Sequence[ExperimentView]) -> list[str]:
    """What needs attention first: one line per kind of alarm, most severe first, with the experiments."""
    by_kind: dict[str, list[str]] = {}
    for view in views:
        for alarm in view.alarms:
            by_kind.setdefault(alarm.kind, []).append(view.experiment_id)
    if not by_kind:
        return []
    lines = ["", "Alarms, most severe first (details: zcl report --experiment ID):"]
    for kind in SEVERITY:
        if kind in by_kind:
            ids = by_kind[kind]
            lines += wrap(f"{SYMBOL} {LABELS[kind]} ({len(ids)}): {', '.join(ids)}", INDENT)
    return lines


def render_experiment(view: ExperimentView, all_metrics: bool = False) -> list[str]:
    """The block of one experiment (see the module docstring)."""
    badge = view.decision.upper() if view.decision != NOT_COMPUTED else "decision not computed"
    looks = f"{view.looks} look{'s' if view.looks != 1 else ''}"
    lines = wrap(
        f"{view.experiment_id} [{badge}] {view.org_id} / {view.task_type}, kind {view.kind}, "
        f"{view.registration['randomization_unit']}-randomized, " + glue(f"look of {view.as_of} ({looks})")
    )
    reason = view.decision_reason
    status = f"; experiment status {view.status}" if view.status else ""
    for alarm in view.alarms:
        lines += wrap(f"{SYMBOL} {alarm.title}: {alarm.detail}", INDENT)
    lines += wrap(f"Decision: {view.decision}" + (f" ({reason})" if reason else "") + status, INDENT)
    lines += wrap(f"Hypothesis: {view.registration['hypothesis']}", INDENT)
    metrics = view.comparisons.get_column("metric").unique(maintain_order=True).to_list()
    hidden = [m for m in metrics if view.role_of(m) == "secondary"] if not all_metrics else []
    for metric in metrics:
        if metric in hidden:
            continue
        lines += _metric_block(view, metric)
    if hidden:
        lines += wrap(
            f"{len(hidden)} more metric{'s' if len(hidden) != 1 else ''} without a registered role ({', '.join(hidden)}): "
            f"zcl report --experiment {view.experiment_id} --all-metrics",
            INDENT,
        )
    lines += wrap(srm_sentence(view) + "; units assigned " + _units(view), INDENT)
    lines += wrap("Plan: " + progress_sentence(view), INDENT)
    lines += wrap("Data: " + verified_sentence(view) + "; " + quarantine_sentence(view), INDENT)
    return lines


def _units(view: ExperimentView) -> str:
    parts = []
    for arm in view.arms():
        units = arm.assigned_units if arm.assigned_units is not None else arm.units
        share = f" (share {arm.share:.3g})" if arm.share is not None else ""
        parts.append(f"{arm.name} {units:,}{share}" if units is not None else f"{arm.name} {NOT_COMPUTED}")
    return ", ".join(parts)


def _metric_block(view: ExperimentView, metric: str) -> list[str]:
    role = view.role_of(metric)
    direction = direction_words(view.direction_of(metric))
    extra = ""
    if role == "primary":
        extra = f", MDE {number(view.mde)}"
    elif view.margin_of(metric) is not None:
        extra = f", non-inferiority margin {number(view.margin_of(metric))}"
    lines = wrap(f"{metric} ({role}; {direction}{extra})", INDENT)
    rows = view.comparisons.filter(pl.col("metric") == metric)
    binary = is_binary(view, metric)
    if role == "primary":
        figure = figure_label(view, binary)
        lines += wrap(
            f"per arm, units and {figure}: "
            + "; ".join(glue(f"{a.name} {arm_figure(a, binary, per_user(view))}") for a in view.arms())
            + ("" if binary else f" [units: {rows.get_column('analysis_unit')[0]}]"),
            INDENT * 2,
        )
    for r in rows.iter_rows(named=True):
        lines += _comparison_lines(r, r.get("role") or role, comparison_label(view, r), cuped_sentence(view, r))
    return lines


def _comparison_lines(r: dict, role: str, label: str, cuped: str = "") -> list[str]:
    decision = r.get("decision")
    head = f"{label}: difference {signed(r['difference'])}, "
    head += glue(f"CS {interval(r['cs_low'], r['cs_high'])}")
    head += " decides" if role == "primary" else " (guardrail)" if role == "guardrail" else ""
    if decision:
        head += f" -> {decision}"
    adjusted = r.get("cs_p_adjusted")
    tail = [
        glue(f"anytime-valid p {p_value(r.get('cs_p_value'))}")
        + (glue(f" (Holm-adjusted {p_value(adjusted)})") if adjusted is not None else ""),
        glue(f"95% CI {interval(r['ci_low'], r['ci_high'])}") + f" ({method_name(r['ci_method'])})",
        glue(f"p {p_value(r['p_value'])}") + f" ({method_name(r['p_method'])})",
    ]
    if r.get("mn_ci_low") is not None:
        tail.append(glue(f"Miettinen-Nurminen CI {interval(r['mn_ci_low'], r['mn_ci_high'])}") + ", " + glue(f"p {p_value(r['mn_p_value'])}"))
    tail.append("relative lift " + glue(lift(r["relative_lift"], r["lift_ci_low"], r["lift_ci_high"])))
    if r.get("fisher_p_value") is not None:
        tail.append(glue(f"Fisher's exact p {p_value(r['fisher_p_value'])}"))
    if r.get("guardrail_status"):
        tail.append(f"guardrail: {r['guardrail_status']}")
    if r.get("interval_test_disagree"):
        tail.append("note: the descriptive interval and test disagree (small table)")
    if cuped:
        tail.append(cuped)
    return wrap(head + "; " + "; ".join(tail), INDENT * 2, hanging="    ")
