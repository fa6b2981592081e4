"""Dagster metadata of the analyst's view: tables with a schema, numbers the UI plots, one summary.

Conventions (Dagster docs, "Asset metadata"): tables as ``MetadataValue.table`` with a
``TableSchema`` whose columns carry a description; figures as plain numbers so the UI can plot
them over materializations (nights); ``dagster/row_count``; the verdict with its plots as one
Markdown entry whose images are PNG ``data:`` URIs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import dagster as dg

from zcl_assets.reports.experiments import NOT_COMPUTED, ExperimentView
from zcl_assets.reports.formatting import (
    arm_figure,
    count,
    direction_words,
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
from zcl_assets.reports.markdown import plots_markdown, verdict_markdown
from zcl_assets.reports.methods import DECIDING_INTERVAL, method_name


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


def table(columns: Sequence[dg.TableColumn], rows: Sequence[dict]) -> dg.TableMetadataValue:
    """``MetadataValue.table`` of ``rows`` (dicts keyed by column name), in the schema's order."""
    names = [c.name for c in columns]
    records = [dg.TableRecord({n: r.get(n) for n in names}) for r in rows]  # every record has every field
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns=list(columns)))


ARM_COLUMNS = (
    _column("arm", "string", "arm name; control first"),
    _column("share", "float", "registered allocation share"),
    _column("assigned", "int", "units assigned up to the look (the sample-ratio counts)"),
    _column("analysed", "int", "units with a verified outcome of the primary metric"),
    _column("figure", "string", "binary: successes/units = rate (user-randomized: successes over users, mean per user); continuous: mean (sd) per unit"),
)

COMPARISON_COLUMNS = (
    _column("metric", "string", "metric analysed, its role (primary decides; a guardrail can hold adopt back) and good direction"),
    _column("comparison", "string", "treatment arm vs control arm"),
    _column("decision", "string", "decision of this comparison"),
    _column("difference", "float", "treatment minus control, in the metric's units"),
    _column("deciding_interval", "string", "confidence sequence: " + method_name(DECIDING_INTERVAL, cite=True)),
    _column("anytime_p", "string", "anytime-valid p-value of the confidence sequence, raw / Holm-adjusted"),
)

DESCRIPTIVE_COLUMNS = (
    _column("metric", "string", "metric analysed"),
    _column("comparison", "string", "treatment arm vs control arm"),
    _column("descriptive_interval", "string", "95% interval (fixed horizon) and its method"),
    _column("descriptive_p", "string", "p-value (fixed horizon) and its test"),
    _column("relative_lift", "string", "treatment / control - 1, with its 95% interval (" + method_name("log_delta_method") + ")"),
)

HISTORY_COLUMNS = (
    _column("as_of", "string", "UTC day of the look"),
    _column("comparison", "string", "treatment arm vs control arm (primary metric)"),
    _column("units", "string", "control / treatment units analysed"),
    _column("difference", "float", "treatment minus control"),
    _column("cs", "string", "confidence sequence (decides)"),
    _column("ci_95", "string", "95% interval (descriptive)"),
    _column("decision", "string", "decision at that look"),
)

QUARANTINE_COLUMNS = (
    _column("stage", "string", "contract (quarantined at staging) or experience (excluded from the analysis)"),
    _column("table", "string", "landing table of the row"),
    _column("rule", "string", "rule that rejected the row (docs/pipeline.md)"),
    _column("rows", "int", "rows of this experiment"),
)

OVERVIEW_COLUMNS = (
    _column("attention", "string", "invalid, decided, continuing or not computed: the order of this table"),
    _column("experiment", "string", "experiment id = partition of experiment_report"),
    _column("decision", "string", "headline decision"),
    _column("metric", "string", "primary metric; up: higher is better, down: lower is better"),
    _column("cs", "string", "deciding interval (confidence sequence) of each primary comparison"),
    _column("plan", "string", "share of the planned sample reached"),
    _column("days_left", "float", "days to reach the planned sample at current traffic"),
    _column("srm", "string", "sample-ratio status"),
    _column("as_of", "string", "UTC day of the experiment's latest look"),
)


def overview_table(views: Sequence[ExperimentView]) -> tuple[list[dg.TableRecord], dg.TableSchema]:
    """Rows and schema of the night's overview, one row per experiment, in attention order."""
    rows = []
    for v in views:
        arrow = {"increase": "up", "decrease": "down"}.get(v.direction_of(v.primary_metric) or "", "?")
        fraction = v.information_fraction
        rows.append({
            "attention": v.attention,
            "experiment": v.experiment_id,
            "decision": v.decision,
            "metric": f"{v.primary_metric} ({arrow})",
            "cs": "; ".join(interval(r["cs_low"], r["cs_high"]) for r in v.primary_rows()),
            "plan": f"{fraction:.0%}" if fraction is not None else "-",
            "days_left": _real(v.days_left),
            "srm": v.srm_status,
            "as_of": v.as_of,
        })
    value = table(OVERVIEW_COLUMNS, rows)
    return value.records, value.schema


def experiment_metadata(view: ExperimentView, forest_png: bytes, history_png: bytes) -> dict[str, object]:
    """Metadata of one ``experiment_report`` partition (one experiment as of its latest look)."""
    primary = view.primary_rows()
    first = primary[0] if primary else {}
    binary = is_binary(view, view.primary_metric)
    arms = [
        {"arm": a.name, "share": _shown(a.share), "assigned": a.assigned_units, "analysed": a.units,
         "figure": arm_figure(a, binary, per_user(view))}
        for a in view.arms()
    ]
    comparisons = [
        {
            "metric": f"{r['metric']} ({view.role_of(r['metric'])}; {direction_words(view.direction_of(r['metric']))})",
            "comparison": f"{r['treatment_arm']} vs {r['control_arm']}", "decision": r.get("decision") or NOT_COMPUTED,
            "difference": _shown(r["difference"]),
            "deciding_interval": interval(r["cs_low"], r["cs_high"]),
            "anytime_p": f"{p_value(r.get('cs_p_value'))} / {p_value(r.get('cs_p_adjusted'))}",
        }
        for r in view.comparisons.iter_rows(named=True)
    ]
    descriptive = [
        {
            "metric": r["metric"], "comparison": f"{r['treatment_arm']} vs {r['control_arm']}",
            "descriptive_interval": f"{interval(r['ci_low'], r['ci_high'])} ({method_name(r['ci_method'])})",
            "descriptive_p": f"{p_value(r['p_value'])} ({method_name(r['p_method'])})",
            "relative_lift": lift(r["relative_lift"], r["lift_ci_low"], r["lift_ci_high"]),
        }
        for r in view.comparisons.iter_rows(named=True)
    ]
    history = [
        {
            "as_of": r["as_of"].isoformat(), "comparison": f"{r['treatment_arm']} vs {r['control_arm']}",
            "units": f"{count(r['n_control'])} / {count(r['n_treatment'])}", "difference": _shown(r["difference"]),
            "cs": interval(r["cs_low"], r["cs_high"]), "ci_95": interval(r["ci_low"], r["ci_high"]),
            "decision": r.get("decision") or NOT_COMPUTED,
        }
        for r in view.history.iter_rows(named=True)
    ]
    quarantine = [
        {"stage": r["stage"], "table": r["source_table"], "rule": r["rule"], "rows": r["rows"]}
        for r in view.quarantine.iter_rows(named=True)
    ]
    deciding = "; ".join(
        f"{r['treatment_arm']} vs {r['control_arm']}: {interval(r['cs_low'], r['cs_high'])}" for r in primary
    )
    metadata: dict[str, object] = {
        "verdict": dg.MetadataValue.md(verdict_markdown(view)),
        "plots": dg.MetadataValue.md(plots_markdown(view, forest_png, history_png)),
        "decision": view.decision,
        "decision_reason": view.decision_reason or "-",
        "deciding_interval": f"{deciding}; method: {method_name(DECIDING_INTERVAL, cite=True)}",
        "srm": srm_sentence(view),
        "plan": progress_sentence(view),
        "data_quality": f"{verified_sentence(view)}; {quarantine_sentence(view)}",
        "as_of": view.as_of,
        "arms": table(ARM_COLUMNS, arms),
        "comparisons": table(COMPARISON_COLUMNS, comparisons),
        "descriptive_figures": table(DESCRIPTIVE_COLUMNS, descriptive),
        "look_history": table(HISTORY_COLUMNS, history),
        "quarantined_and_excluded_rows": table(QUARANTINE_COLUMNS, quarantine),
        "dagster/row_count": view.comparisons.height,
    }
    # Plain numbers, so the UI plots them over looks (materializations of this partition).
    numbers = {
        "difference": first.get("difference"),
        "cs_low": first.get("cs_low"),
        "cs_high": first.get("cs_high"),
        "information_fraction": view.information_fraction,
        "days_left": view.days_left,
        "srm_sequential_p": view.srm_p,
        "verified_share": view.verified_share,
        "units_control": first.get("n_control"),
        "units_treatment": first.get("n_treatment"),
        "quarantined_rows": view.quarantined_rows,
        "excluded_rows": view.excluded_rows,
    }
    metadata.update({k: _real(v) for k, v in numbers.items() if _real(v) is not None})
    return metadata
