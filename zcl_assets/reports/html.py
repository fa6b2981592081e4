"""The HTML report (``zcl report --html FILE``): one self-contained page for every experiment.

Inline CSS, plots as SVG ``data:`` URIs, no script and no external resource: it reads offline
and can be attached to an email. Experiments are grouped by what needs attention (invalid, an
alarm, decided, continuing, decision not computed: ``reports/alarms.py``), in the fixed order of
severity within each group; each has the same figures, alarms and plots as its page in the
Dagster UI. A card that cannot be drawn says why, and the others are drawn.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import os
from collections.abc import Mapping, Sequence

from zcl_assets.reports.alarms import SYMBOL
from zcl_assets.reports.experiments import ATTENTION_ORDER, NOT_COMPUTED, ExperimentView
from zcl_assets.reports.formatting import (
    TABLE_ROWS,
    arm_figure,
    comparison_label,
    count,
    cuped_sentence,
    days_left_text,
    direction_words,
    figure_label,
    interval,
    is_binary,
    number,
    p_value,
    per_user,
    plan_reached,
    progress_sentence,
    quarantine_sentence,
    segment_arm,
    segment_label,
    signed,
    srm_sentence,
    verified_sentence,
)
from zcl_assets.reports.formatting import (
    lift as lift_text,
)
from zcl_assets.reports.methods import DECIDING_INTERVAL, method_name
from zcl_assets.reports.planning import CAPTION, EMPTY, outlook_sentence, power_curve

GROUP_TITLES = {
    "invalid": "Invalid: do not trust these results",
    "alarm": "Alarm: a guardrail breached or no new units",
    "decided": "Decided",
    "continuing": "Continuing: still collecting",
    NOT_COMPUTED: "Decision not computed",
}

BADGE_COLOURS = {
    "invalid": "#b71c1c", "reject": "#e65100", "adopt": "#1b5e20", "no_effect": "#546e7a",
    "inconclusive": "#f9a825", "continue": "#1565c0", NOT_COMPUTED: "#757575",
}

CSS = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto;max-width:1100px;padding:16px;color:#222}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:2px solid #ccc;padding-bottom:4px;margin-top:32px}
h3{font-size:16px;margin:0 0 6px 0}
.legend,.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:12px 0;background:#fff}
.legend{background:#f7f7f7}
.badge{display:inline-block;color:#fff;border-radius:4px;padding:1px 8px;font-weight:600;font-size:13px;margin-right:6px}
.facts{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0}.facts div{min-width:240px}
.alarm{color:#b71c1c;font-weight:600}.ok{color:#1b5e20}
.alarms{border-left:4px solid #b71c1c;background:#fdecea;padding:6px 10px;margin:8px 0}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f1f1f1}td.l,th.l{text-align:left}
.bar{display:inline-block;width:160px;height:10px;background:#eee;border-radius:5px;vertical-align:middle;overflow:hidden}
.bar span{display:block;height:100%;background:#1f5fa8}
img{max-width:100%;height:auto;display:block;margin:6px 0}
.muted{color:#666}a{color:#1f5fa8}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _img(svg: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/svg+xml;base64,{base64.b64encode(svg).decode("ascii")}">'


def badge(decision: str) -> str:
    colour = BADGE_COLOURS.get(decision, "#757575")
    return f'<span class="badge" style="background:{colour}">{_e(decision)}</span>'


def _anchor(view: ExperimentView) -> str:
    return "x-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in view.experiment_id)


def render_html(
    views: Sequence[ExperimentView], plots: Mapping[str, tuple[bytes, bytes]], title: str = "ZCL experiment report",
    failures: Mapping[str, str] | None = None, outlook: Sequence[dict] = (),
) -> str:
    """The page. ``plots`` maps an experiment id to its (forest plot, look history) SVGs; ``failures`` an
    experiment id to the error that kept its page from being drawn (its card says so); ``outlook`` the rows of
    ``family_outlook`` (what each family could detect tonight), drawn last."""
    failures = dict(failures or {})
    days = sorted({v.as_of for v in views})
    looks = days[0] + (f" to {days[-1]}" if len(days) > 1 else "") if days else "none"
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cards = {v.experiment_id: _safe_card(v, plots.get(v.experiment_id), failures) for v in views}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{len(views)} experiments; latest look of each ({_e(looks)}); generated {generated}; '
        '<a href="#g-outlook">what each family could detect tonight</a>.</p>',
        _legend(),
        _overview([v for v in views if v.experiment_id not in failures]),
    ]
    failed = [v for v in views if v.experiment_id in failures]
    if failed:
        parts.append(f'<h2 id="g-report_failed">Report failed ({len(failed)})</h2>')
        parts += [cards[v.experiment_id] for v in failed]
    for group in ATTENTION_ORDER:
        members = [v for v in views if v.attention == group and v.experiment_id not in failures]
        if not members:
            continue
        parts.append(f'<h2 id="g-{_e(group.replace(" ", "_"))}">{_e(GROUP_TITLES[group])} ({len(members)})</h2>')
        parts += [cards[v.experiment_id] for v in members]
    parts.append(_outlook(outlook))
    parts.append("</body></html>")
    return "\n".join(parts)


def _outlook(rows: Sequence[dict]) -> str:
    """The section of the family outlook: one line and one power curve per family."""
    items = "".join(
        f'<div class="card"><h3>{_e(r["org_id"])} / {_e(r["task_type"])}</h3><p>{_e(outlook_sentence(r))}</p>'
        f'{_img(power_curve(r), "power curve of " + r["org_id"] + " / " + r["task_type"])}</div>'
        for r in rows
    )
    head = f'<h2 id="g-outlook">Planning: what each family could detect tonight ({len(rows)})</h2>'
    if not rows:
        return f'{head}<p class="muted">{_e(EMPTY)}</p>'
    return f'{head}<p class="muted">Power curves: {_e(CAPTION)}</p>{items}'


def _safe_card(view: ExperimentView, plots: tuple[bytes, bytes] | None, failures: dict[str, str]) -> str:
    """The experiment's card, or one that says why it could not be drawn (the error is added to ``failures``)."""
    if view.experiment_id not in failures:
        try:
            return _card(view, plots)
        except Exception as exc:  # noqa: BLE001 - one experiment's card never takes the page down
            failures[view.experiment_id] = f"{type(exc).__name__}: {exc}"
    return (
        f'<div class="card" id="{_anchor(view)}"><h3>{badge("invalid")}{_e(view.experiment_id)}</h3>'
        f'<div class="alarms">{SYMBOL} This card could not be drawn: {_e(failures[view.experiment_id])}. '
        f"The look is in the warehouse: <code>zcl report --experiment {_e(view.experiment_id)}</code>.</div></div>"
    )


def _legend() -> str:
    return (
        '<div class="legend"><b>How to read.</b> The <b>deciding interval</b> is the '
        f"{_e(method_name(DECIDING_INTERVAL, cite=True))}: valid at every nightly look, it alone leads to a "
        "decision. The <b>95% interval</b> and <b>p</b> are descriptive fixed-horizon figures; each names its method. "
        "Differences are treatment minus control in the metric's units; each metric says which direction is good. "
        "Forest plot: thick blue bar = confidence sequence, thin black bar = 95% interval, grey band = plus or minus "
        "the MDE (the zone where <i>no_effect</i> can be read at the planned sample), dashed red = guardrail margin. "
        "SRM: sample-ratio mismatch of units against the registered allocation.</div>"
    )


OVERVIEW_ROWS = 10
"""Primary comparisons per experiment in the overview table (its card lists every one)."""


def _overview(views: Sequence[ExperimentView]) -> str:
    rows = [
        (
            "<table><tr><th class=l>decision</th><th class=l>experiment</th><th class=l>alarm</th>"
            "<th class=l>primary metric</th><th class=l>comparison</th><th>difference</th><th>deciding interval</th>"
            "<th>plan reached</th><th>days left</th><th class=l>SRM</th></tr>"
        )
    ]
    for v in views:
        try:
            rows += _overview_rows(v)
        except Exception as exc:  # noqa: BLE001 - one experiment's row never takes the page down
            rows.append(f"<tr><td class=l>{badge('invalid')}</td><td class=l><a href=#{_anchor(v)}>{_e(v.experiment_id)}</a>"
                        f"</td><td class=l colspan=8 class=alarm>{SYMBOL} row not drawn: {_e(type(exc).__name__)}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _overview_rows(v: ExperimentView) -> list[str]:
    rows = []
    primary = v.primary_rows()
    fraction = v.information_fraction
    alarm = f'<span class="alarm">{SYMBOL} {_e(v.alarms[0].title)}</span>' if v.alarms else ""
    for i, r in enumerate(primary[:OVERVIEW_ROWS]):
        rows.append(
            "<tr>"
            f"<td class=l>{badge(r.get('decision') or v.decision) if i == 0 or r.get('decision') else ''}</td>"
            f"<td class=l>{f'<a href=#{_anchor(v)}>{_e(v.experiment_id)}</a>' if i == 0 else ''}</td>"
            f"<td class=l>{alarm if i == 0 else ''}</td>"
            f"<td class=l>{_e(v.primary_metric + ' (' + direction_words(v.direction_of(v.primary_metric)) + ')') if i == 0 else ''}</td>"
            f"<td class=l>{_e(r['treatment_arm'] + ' vs ' + r['control_arm'])}</td>"
            f"<td>{_e(signed(r['difference']))}</td><td>{_e(interval(r['cs_low'], r['cs_high']))}</td>"
            f"<td>{_e(plan_reached(fraction, '-'))}</td>"
            f"<td>{_e(_days_cell(v))}</td>"
            f"<td class=l>{_e(v.srm_status) if i == 0 else ''}</td></tr>"
        )
    if len(primary) > OVERVIEW_ROWS:
        rows.append(f"<tr><td></td><td></td><td></td><td></td><td class=l colspan=6 class=muted>and "
                    f"{len(primary) - OVERVIEW_ROWS:,} more comparisons: <a href=#{_anchor(v)}>its card</a></td></tr>")
    return rows


def _days_cell(view: ExperimentView) -> str:
    """Days left in the overview: ``stalled`` for a stalled experiment (its alarm and card say since when)."""
    if view.stalled_since:
        return "stalled"
    return days_left_text(view) if view.days_left is not None else "-"


def _card(view: ExperimentView, plots: tuple[bytes, bytes] | None) -> str:
    fraction = view.information_fraction or 0.0
    srm_class = "alarm" if view.srm_alarm else "ok" if view.srm_status == "ok" else ""
    parts = [
        f'<div class="card" id="{_anchor(view)}">',
        f"<h3>{badge(view.decision)}{_e(view.experiment_id)}</h3>",
        (
            f'<div class="muted">{_e(view.org_id)} / {_e(view.task_type)}, kind {_e(view.kind)}, '
            f"{_e(view.registration['randomization_unit'])}-randomized; look of {_e(view.as_of)} "
            f"({view.looks} look{'s' if view.looks != 1 else ''}); source {_e(view.source)}</div>"
        ),
        *_alarms_block(view),
        f"<p><b>Decision:</b> {_e(view.decision)}" + (f" ({_e(view.decision_reason)})" if view.decision_reason else "") + "</p>",
        f"<p><b>Hypothesis:</b> {_e(view.registration['hypothesis'])}</p>",
        '<div class="facts">',
        f'<div class="{srm_class}">{_e(srm_sentence(view))}</div>',
        (
            f'<div><span class="bar"><span style="width:{min(fraction, 1.0) * 100:.0f}%"></span></span> '
            f"Plan: {_e(progress_sentence(view))}</div>"
        ),
        f"<div>{_e(verified_sentence(view))}</div>",
        f"<div>{_e(quarantine_sentence(view))}</div>",
        "</div>",
        _arms_table(view),
        _comparisons_table(view),
        _breakdowns_table(view),
    ]
    if plots:
        parts += [_img(plots[0], f"forest plot of {view.experiment_id}"), _img(plots[1], f"look history of {view.experiment_id}")]
    if view.quarantine.height:
        parts.append(
            "<table><tr><th class=l>stage</th><th class=l>table</th><th class=l>rule</th><th>rows</th></tr>"
            + "".join(
                f"<tr><td class=l>{_e(r['stage'])}</td><td class=l>{_e(r['source_table'])}</td>"
                f"<td class=l>{_e(r['rule'])}</td><td>{r['rows']:,}</td></tr>"
                for r in view.quarantine.iter_rows(named=True)
            )
            + "</table>"
        )
    parts.append("</div>")
    return "\n".join(parts)


def _alarms_block(view: ExperimentView) -> list[str]:
    """The alarms of the look, most severe first, marked so they stand out (none: nothing)."""
    if not view.alarms:
        return []
    items = "".join(f"<li><b>{SYMBOL} {_e(a.title)}</b>: {_e(a.detail)}</li>" for a in view.alarms)
    return [f'<div class="alarms"><ul style="margin:0;padding-left:18px">{items}</ul></div>']


def _arms_table(view: ExperimentView) -> str:
    binary = is_binary(view, view.primary_metric)
    figure = figure_label(view, binary)
    rows = [
        (
            "<table><tr><th class=l>arm</th><th>share</th><th>units assigned</th><th>units analysed</th>"
            f"<th>{_e(view.primary_metric)}: {_e(figure)}</th></tr>"
        )
    ]
    arms = view.arms()
    for a in arms[:TABLE_ROWS]:
        rows.append(
            f"<tr><td class=l>{_e(a.name)}</td><td>{_e(number(a.share))}</td><td>{_e(count(a.assigned_units))}</td>"
            f"<td>{_e(count(a.units))}</td><td>{_e(arm_figure(a, binary, per_user(view)))}</td></tr>"
        )
    rows += [_more(len(arms), 5, view)]
    rows.append("</table>")
    return "".join(rows)


def _breakdowns_table(view: ExperimentView) -> str:
    """The exploratory breakdown of the primary metric by model and budget (nothing when there is none)."""
    if not view.breakdowns.height:
        return ""
    rows = [
        f'<p><b>Exploratory, never a decision:</b> {_e(view.primary_metric)} by the sessions\' model and budget '
        f'(sessions, every epoch; {_e(view.breakdowns.get_column("method")[0])})</p>',
        "<table><tr><th class=l>comparison</th><th class=l>by</th><th class=l>segment</th><th>control</th>"
        "<th>treatment</th><th>difference</th><th>95% interval<br><span class=muted>descriptive</span></th>"
        "<th>p<br><span class=muted>BH-adjusted</span></th></tr>",
    ]
    for r in view.breakdowns.head(TABLE_ROWS).iter_rows(named=True):
        rows.append(
            f"<tr><td class=l>{_e(r['treatment_arm'])} vs {_e(r['control_arm'])}</td><td class=l>{_e(r['dimension'])}</td>"
            f"<td class=l>{_e(segment_label(r['segment']))}</td><td>{_e(segment_arm(r, 'control'))}</td>"
            f"<td>{_e(segment_arm(r, 'treatment'))}</td><td>{_e(signed(r['difference']))}</td>"
            f"<td>{_e(interval(r['ci_low'], r['ci_high']))}</td><td>{_e(p_value(r['p_bh']))}</td></tr>"
        )
    rows += [_more(view.breakdowns.height, 8, view), "</table>"]
    return "".join(rows)


def _comparisons_table(view: ExperimentView) -> str:
    rows = [
        (
            "<table><tr><th class=l>metric</th><th class=l>comparison</th><th class=l>decision</th><th>difference</th>"
            f"<th>deciding interval<br><span class=muted>{_e(method_name(DECIDING_INTERVAL))}</span></th>"
            "<th>anytime-valid p<br><span class=muted>raw / Holm</span></th>"
            "<th>95% interval<br><span class=muted>descriptive</span></th><th>p<br><span class=muted>descriptive</span></th>"
            "<th>relative lift<br><span class=muted>log-scale delta method</span></th></tr>"
        )
    ]
    for r in view.comparisons.head(TABLE_ROWS).iter_rows(named=True):
        metric = r["metric"]
        role = view.role_of(metric)
        adjusted = r.get("cs_p_adjusted")
        rows.append(
            f"<tr><td class=l>{_e(metric)}<br><span class=muted>{_e(role)}; {_e(direction_words(view.direction_of(metric)))}</span></td>"
            f"<td class=l>{_e(comparison_label(view, r))}</td>"
            f"<td class=l>{badge(r['decision']) if r.get('decision') else _e(NOT_COMPUTED)}</td>"
            f"<td>{_e(signed(r['difference']))}{_muted(cuped_sentence(view, r))}</td>"
            f"<td><b>{_e(interval(r['cs_low'], r['cs_high']))}</b></td>"
            f"<td>{_e(p_value(r.get('cs_p_value')))} / {_e(p_value(adjusted) if adjusted is not None else NOT_COMPUTED)}</td>"
            f"<td>{_e(interval(r['ci_low'], r['ci_high']))}<br><span class=muted>{_e(method_name(r['ci_method']))}</span></td>"
            f"<td>{_e(p_value(r['p_value']))}<br><span class=muted>{_e(method_name(r['p_method']))}</span></td>"
            f"<td>{_e(lift_text(r['relative_lift'], r['lift_ci_low'], r['lift_ci_high']))}</td></tr>"
        )
    rows += [_more(view.comparisons.height, 9, view)]
    rows.append("</table>")
    return "".join(rows)


def _muted(text: str) -> str:
    """``text`` on its own line in the cell, muted (nothing when empty)."""
    return f"<br><span class=muted>{_e(text)}</span>" if text else ""


def _more(rows: int, columns: int, view: ExperimentView) -> str:
    """The last row of a table cut at :data:`TABLE_ROWS`: how many rows are left out, and where they are."""
    if rows <= TABLE_ROWS:
        return ""
    return (f'<tr><td class=l colspan={columns}>and {rows - TABLE_ROWS:,} more rows: '
            f"<code>zcl report --experiment {_e(view.experiment_id)} --json</code></td></tr>")


def plot_all(views: Sequence[ExperimentView], cache_dir: str | os.PathLike[str] | None = None) -> dict[str, tuple[bytes, bytes]]:
    """Forest plot and look history of every view (a few milliseconds each), read back from
    ``cache_dir`` where the same view was drawn before (:func:`zcl_assets.reports.plots.plots`)."""
    from zcl_assets.reports.plots import PlotCache, plots

    cache = PlotCache(cache_dir) if cache_dir is not None else None
    return {v.experiment_id: plots(v, cache) for v in views}

