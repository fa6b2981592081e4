"""Dagster metadata of the analyst's view: tables with a schema, numbers the UI plots, one summary.

Conventions (Dagster docs, "Asset metadata"): tables as ``MetadataValue.table`` with a
``TableSchema`` whose columns carry a description; figures as plain numbers so the UI can plot
them over materializations (nights); ``dagster/row_count``; the verdict and the plots as
Markdown entries whose images are SVG ``data:`` URIs.

Fit: a page must read at 1440 x 900 without scrolling sideways. The UI lays metadata out as a
table of key and value whose width is the longest key plus the widest value, so keys stay
short (at most :data:`KEY_LENGTH` characters, like ``dagster/row_count``), text entries are
prose that wraps, and each table keeps to the columns a person compares; details are a second
table (``descriptive``) or the page of the experiment. Long tables are cut at
:data:`TABLE_ROWS` rows, the last row saying where the rest is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import dagster as dg
import polars as pl

from zcl_assets.reports.alarms import SYMBOL
from zcl_assets.reports.experiments import ExperimentView
from zcl_assets.reports.formatting import (
    TABLE_ROWS,
    arm_figure,
    comparison_label,
    count,
    cuped_sentence,
    interval,
    is_binary,
    lift,
    p_value,
    per_user,
    progress_sentence,
    quarantine_sentence,
    srm_sentence,
    verified_sentence,
)
from zcl_assets.reports.index import IndexRow, alarm_label
from zcl_assets.reports.markdown import breakdowns_markdown, plots_markdown, verdict_markdown
from zcl_assets.reports.methods import DECIDING_INTERVAL, method_name
from zcl_assets.reports.plots import MAX_PANELS, shown_rows

KEY_LENGTH = 17
"""Longest metadata key (``dagster/row_count``): the key column of the UI is as wide as the longest key."""
ARROWS = {"increase": "\u2191", "decrease": "\u2193"}


def _column(name: str, kind: str, description: str) -> dg.TableColumn:
    return dg.TableColumn(name=name, type=kind, description=description)


def _real(value: object) -> float | None:
    """A finite float for a numeric cell, else None (the UI shows an empty cell)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _shown(value: object, digits: int = 4) -> float | None:
    """A finite float rounded to ``digits`` significant digits, for table cells a person reads."""
    real = _real(value)
    if real is None or real == 0:
        return real
    return round(real, digits - 1 - math.floor(math.log10(abs(real))))


def table(columns: Sequence[dg.TableColumn], rows: Sequence[dict], more: str = "", total: int | None = None
          ) -> dg.TableMetadataValue:
    """``MetadataValue.table`` of ``rows`` (dicts keyed by column name), in the schema's order, cut at
    :data:`TABLE_ROWS` rows of ``total`` (default: all of ``rows``); the last row then says how many are
    left out and ``more`` where they are."""
    names = [c.name for c in columns]
    kept = list(rows[:TABLE_ROWS])
    total = len(rows) if total is None else total
    if total > TABLE_ROWS:
        label = next(c.name for c in columns if c.type == "string")
        kept.append({label: f"\u2026 {total - TABLE_ROWS:,} more rows{': ' + more if more else ''}"})
    records = [dg.TableRecord({n: r.get(n) for n in names}) for r in kept]  # every record has every field
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns=list(columns)))


ARM_COLUMNS = (
    _column("arm", "string", "arm name; control first"),
    _column("share", "float", "registered allocation share"),
    _column("assigned", "int", "units assigned up to the look (the sample-ratio counts)"),
    _column("analysed", "int", "units with a verified outcome of the primary metric"),
    _column("figure", "string", "binary: successes/units = rate (user-randomized: successes over users, mean per user); "
                                "continuous: mean (sd) per unit"),
)

COMPARISON_COLUMNS = (
    _column("metric", "string", "metric, its role (primary decides; a guardrail can hold adopt back; secondary is "
                                "reported) and its good direction (\u2191 higher is better, \u2193 lower is better)"),
    _column("comparison", "string", "treatment arm vs control arm, and what is estimated when a metric has two estimands"),
    _column("decision", "string", "decision of this comparison"),
    _column("difference", "float", "treatment minus control, in the metric's units"),
    _column("cs", "string", "deciding interval: " + method_name(DECIDING_INTERVAL, cite=True)),
    _column("p", "string", "anytime-valid p-value of the confidence sequence, raw / Holm-adjusted"),
)

DESCRIPTIVE_COLUMNS = (
    _column("metric", "string", "metric analysed"),
    _column("comparison", "string", "treatment arm vs control arm"),
    _column("ci_95", "string", "95% interval (fixed horizon, descriptive) and its method"),
    _column("p", "string", "p-value (fixed horizon, descriptive) and its test"),
    _column("lift", "string", "treatment / control - 1, with its 95% interval (" + method_name("log_delta_method") + ")"),
    _column("variance", "string", "the share of the difference's variance CUPED (Deng et al. 2013) removed with each "
                                  "unit's pre-experiment mean, or why it did not apply"),
)

HISTORY_COLUMNS = (
    _column("as_of", "string", "UTC day of the look"),
    _column("comparison", "string", "treatment arm vs control arm (primary metric)"),
    _column("units", "string", "control / treatment units analysed"),
    _column("difference", "float", "treatment minus control"),
    _column("cs", "string", "confidence sequence (decides); the 95% interval is in zcl report --json"),
    _column("decision", "string", "decision at that look"),
)

QUARANTINE_COLUMNS = (
    _column("stage", "string", "contract (quarantined at staging) or experience (excluded from the analysis)"),
    _column("table", "string", "landing table of the row"),
    _column("rule", "string", "rule that rejected the row (docs/pipeline.md)"),
    _column("rows", "int", "rows of this experiment"),
)


def _metric_label(view: ExperimentView, metric: str) -> str:
    arrow = ARROWS.get(view.direction_of(metric) or "", "")
    return f"{metric} ({view.role_of(metric)}{' ' + arrow if arrow else ''})"


def _comparison_rows(view: ExperimentView) -> tuple[list[dict], list[dict]]:
    comparisons, descriptive = [], []
    for r in view.comparisons.head(TABLE_ROWS).iter_rows(named=True):  # the table shows no more
        label = comparison_label(view, r)
        comparisons.append({
            "metric": _metric_label(view, r["metric"]), "comparison": label, "decision": r.get("decision") or "-",
            "difference": _shown(r["difference"]), "cs": interval(r["cs_low"], r["cs_high"]),
            "p": f"{p_value(r.get('cs_p_value'))} / {p_value(r.get('cs_p_adjusted'))}",
        })
        descriptive.append({
            "metric": r["metric"], "comparison": label,
            "ci_95": f"{interval(r['ci_low'], r['ci_high'])} {method_name(r['ci_method'])}",
            "p": f"{p_value(r['p_value'])} {method_name(r['p_method'])}",
            "lift": lift(r["relative_lift"], r["lift_ci_low"], r["lift_ci_high"]),
            "variance": cuped_sentence(view, r) or "-",
        })
    return comparisons, descriptive


def _history_rows(view: ExperimentView) -> list[dict]:
    """Every look of the primary comparisons the look-history plot draws (at most :data:`MAX_PANELS`),
    newest first: the table keeps :data:`TABLE_ROWS` rows, so after many nights it shows the latest ones."""
    arms = set(shown_rows(view.primary, MAX_PANELS).get_column("treatment_arm").to_list()) if view.primary.height else set()
    return [
        {
            "as_of": r["as_of"].isoformat(), "comparison": f"{r['treatment_arm']} vs {r['control_arm']}",
            "units": f"{count(r['n_control'])} / {count(r['n_treatment'])}", "difference": _shown(r["difference"]),
            "cs": interval(r["cs_low"], r["cs_high"]), "decision": r.get("decision") or "-",
        }
        for r in view.history.select("as_of", "treatment_arm", "control_arm", "n_control", "n_treatment", "difference",
                                     "cs_low", "cs_high", "decision")
        .filter(pl.col("treatment_arm").is_in(list(arms))).sort("as_of", descending=True, maintain_order=True)
        .iter_rows(named=True)
    ]


def experiment_metadata(view: ExperimentView, forest_svg: bytes, history_svg: bytes) -> dict[str, object]:
    """Metadata of one ``experiment_report`` partition (one experiment as of its latest look)."""
    primary = view.primary_rows()
    first = primary[0] if primary else {}
    binary = is_binary(view, view.primary_metric)
    arms = [
        {"arm": a.name, "share": _shown(a.share), "assigned": a.assigned_units, "analysed": a.units,
         "figure": arm_figure(a, binary, per_user(view))}
        for a in view.arms()
    ]
    comparisons, descriptive = _comparison_rows(view)
    quarantine = [
        {"stage": r["stage"], "table": r["source_table"], "rule": r["rule"], "rows": r["rows"]}
        for r in view.quarantine.iter_rows(named=True)
    ]
    deciding = "; ".join(
        f"{r['treatment_arm']} vs {r['control_arm']}: {interval(r['cs_low'], r['cs_high'])}" for r in primary[:TABLE_ROWS]
    )
    more = f"zcl report --experiment {view.experiment_id} --json"
    metadata: dict[str, object] = {
        "verdict": dg.MetadataValue.md(verdict_markdown(view)),
        "plots": dg.MetadataValue.md(plots_markdown(view, forest_svg, history_svg)),
        "decision": view.decision,
        "alarms": "; ".join(f"{SYMBOL} {a.title}: {a.detail}" for a in view.alarms) or "none",
        "decision_reason": view.decision_reason or "-",
        "deciding_interval": f"{deciding}; method: {method_name(DECIDING_INTERVAL, cite=True)}",
        "srm": srm_sentence(view),
        "plan": progress_sentence(view),
        "cuped": "; ".join(f"{r['treatment_arm']} vs {r['control_arm']}: {cuped_sentence(view, r)}"
                                        for r in primary[:TABLE_ROWS] if cuped_sentence(view, r)) or "-",
        "data_quality": f"{verified_sentence(view)}; {quarantine_sentence(view)}",
        "as_of": view.as_of,
        "arms": table(ARM_COLUMNS, arms, more),
        "comparisons": table(COMPARISON_COLUMNS, comparisons, more, view.comparisons.height),
        "descriptive": table(DESCRIPTIVE_COLUMNS, descriptive, more, view.comparisons.height),
        "look_history": table(HISTORY_COLUMNS, _history_rows(view), more),
        "rows_by_rule": table(QUARANTINE_COLUMNS, quarantine),
        "exploratory_segments": dg.MetadataValue.md(breakdowns_markdown(view)),
        "dagster/row_count": view.comparisons.height,
    }
    # Plain numbers, so the UI plots them over looks (materializations of this partition).
    numbers = {
        "difference": first.get("difference"),
        "cs_low": first.get("cs_low"),
        "cs_high": first.get("cs_high"),
        "plan_reached": view.information_fraction,
        "days_left": None if view.stalled_since else view.days_left,
        "srm_sequential_p": view.srm_p,
        "verified_share": view.verified_share,
        "units_control": first.get("n_control"),
        "units_treatment": first.get("n_treatment"),
        "quarantined_rows": view.quarantined_rows,
        "excluded_rows": view.excluded_rows,
    }
    metadata.update({k: _real(v) for k, v in numbers.items() if _real(v) is not None})
    return metadata


def failed_metadata(experiment_id: str, error: str) -> dict[str, object]:
    """Metadata of a page that could not be drawn: what failed, and where the figures still are. Reads
    nothing of the view, so it cannot fail the same way."""
    from zcl_assets.reports.markdown import text

    return {
        "verdict": dg.MetadataValue.md(
            f"### {SYMBOL} REPORT FAILED\n\nThis page could not be drawn: {text(error[:600])}\n\n"
            f"The look itself is in the warehouse: zcl report \\-\\-experiment {text(experiment_id)}"
        ),
        "report_error": error[:2000],
    }


OVERVIEW_COLUMNS = (
    _column("experiment", "string", "experiment id = partition of experiment_report (index: a link to its page)"),
    _column("decision", "string", "headline decision"),
    _column("alarm", "string", "kind of the most severe alarm (SRM mismatch, baseline drift, guardrail breached, "
                               "stalled, ...), else -; the index and the experiment's page give its figures"),
    _column("plan", "string", "share of the planned sample reached"),
    _column("srm", "string", "sample-ratio status"),
)


def overview_table(rows: Sequence[IndexRow]) -> dg.TableMetadataValue:
    """The night's overview, one row per experiment (``reports/index.py``), in attention order, uncut."""
    records = [dg.TableRecord({
        "experiment": r.experiment, "decision": r.decision, "alarm": f"{SYMBOL} {alarm_label(r)}" if r.alarm else "-",
        "plan": r.plan, "srm": r.srm,
    }) for r in rows]
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns=list(OVERVIEW_COLUMNS)))
