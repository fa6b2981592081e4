"""The night's index: one row per experiment, what needs attention first, with a link to its page.

:func:`index_row` reads the few facts an analyst compares across experiments (decision, the most
severe alarm, deciding interval, plan, days left, SRM); :func:`failed_row` stands in for an
experiment whose row could not be read, so that one experiment never takes the index down.
:func:`attention_markdown` is short enough for the Dagster UI to show inline (alarms first, in
the fixed order of ``reports/alarms.py``, each with links to the pages); :func:`index_markdown`
lists every experiment with its link (behind the UI's *Show Markdown*).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from zcl_assets.reports.alarms import LABELS, SYMBOL
from zcl_assets.reports.experiments import NOT_COMPUTED, ExperimentView
from zcl_assets.reports.formatting import days_left_text, interval, plan_reached
from zcl_assets.reports.markdown import INLINE_LIMIT, experiment_link, text


class IndexRow(NamedTuple):
    """One experiment of the index. ``group`` is its attention group, ``alarm_kind`` the kind of its most
    severe alarm ('' without one), ``alarm`` that alarm's title."""

    experiment: str
    group: str
    decision: str
    alarm_kind: str
    alarm: str
    cs: str
    plan: str
    days_left: str
    srm: str


def index_row(view: ExperimentView) -> IndexRow:
    first = view.primary_rows()[:1]
    more = f" (+{view.primary.height - 1})" if view.primary.height > 1 else ""
    fraction = view.information_fraction
    alarm = view.alarms[0] if view.alarms else None
    return IndexRow(
        experiment=view.experiment_id, group=view.attention, decision=view.decision,
        alarm_kind=alarm.kind if alarm else "", alarm=alarm.title if alarm else "",
        cs=(interval(first[0]["cs_low"], first[0]["cs_high"]) + more) if first else NOT_COMPUTED,
        plan=plan_reached(fraction, "-"),
        days_left="stalled" if view.stalled_since else days_left_text(view),
        srm=view.srm_status,
    )


def failed_row(experiment_id: str, error: str) -> IndexRow:
    """The row of an experiment whose report failed: first in the index, its error as its alarm."""
    return IndexRow(experiment_id, "invalid", "report failed", "report_failed", f"report failed: {error[:120]}",
                    "-", "-", "-", "-")


def alarm_label(row: IndexRow) -> str:
    """The kind of the row's most severe alarm in words ('' without one)."""
    return "report failed" if row.alarm_kind == "report_failed" else LABELS.get(row.alarm_kind, "")


def _group_label(row: IndexRow) -> str:
    return f"{SYMBOL} {alarm_label(row)}" if row.alarm_kind else row.decision


def attention_markdown(rows: Sequence[IndexRow], as_of: str, limit: int = INLINE_LIMIT) -> str:
    """What needs attention first, under ``limit`` characters: one line per kind of alarm and per
    decision, in the order of the rows (alarms first, by severity), with the count and, for the
    alarms while room is left, a link to each experiment's page."""
    groups: dict[str, list[IndexRow]] = {}
    for row in rows:
        groups.setdefault(_group_label(row), []).append(row)
    alarmed = sum(len(members) for label, members in groups.items() if label.startswith(SYMBOL))
    head = (f"### {SYMBOL} {alarmed} of {len(rows)} experiments need attention" if alarmed
            else f"### No alarm in {len(rows)} experiments") + f" (look of {text(as_of)})"
    tail = "Every experiment with a link to its page: `index` (Show Markdown); every figure: `html_report`."
    lines = {label: [] for label in groups}
    budget = limit - len(head) - len(tail) - sum(len(label) + 20 for label in groups) - 40
    for label, members in groups.items():
        for row in (members if label.startswith(SYMBOL) else []):  # links for the alarms; the index has all
            link = experiment_link(row.experiment)
            if len(link) + 2 > budget:
                break
            lines[label].append(link)
            budget -= len(link) + 2
    body = []
    for label, members in groups.items():
        links = lines[label]
        rest = len(members) - len(links)
        listed = ", ".join(links) + (f" and {rest:,} more" if links and rest else "")
        body.append(f"**{text(label)} ({len(members):,})**" + (f": {listed}" if listed else ""))
    return "\n\n".join([head, "  \n".join(body), tail])


INDEX_HEADER = ("experiment", "decision", "alarm", "deciding interval (CS)", "plan", "days left", "SRM")


def index_markdown(rows: Sequence[IndexRow]) -> str:
    """Every experiment in attention order as a Markdown table whose first column links to its page."""
    lines = ["| " + " | ".join(INDEX_HEADER) + " |", "|" + "---|" * len(INDEX_HEADER)]
    for r in rows:
        alarm = f"{SYMBOL} {text(r.alarm)}" if r.alarm else "-"
        cells = [experiment_link(r.experiment), text(r.decision), alarm, text(r.cs), text(r.plan), text(r.days_left),
                 text(r.srm)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
