"""The per-experiment summary that ``zcl run`` and ``zcl report`` print."""

from __future__ import annotations

import math

import duckdb

from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS
from zcl_assets.reports.funnel import funnel_section, render_funnel_section

# Derived from the table's one schema: the decision, its reason, the CS and the adjusted p lead.
COMPARISON_COLUMNS = EXPERIMENT_ANALYSIS.report_columns


def _clean(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def look_summary(con: duckdb.DuckDBPyConnection, as_of: str | None = None) -> dict:
    """The look ``as_of`` (default: the latest) as a JSON-ready dict.

    Shape: ``{"as_of", "experiments": [{"experiment_id", "comparisons": [...]}],
    "quarantine": {table: {rule: rows}}}``. Raises ``LookupError`` if no look exists.
    """
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "experiment_analysis" not in tables:
        raise LookupError("no look has been taken yet: run `zcl run`")
    if as_of is None:
        found = con.execute("SELECT CAST(max(as_of) AS VARCHAR) FROM experiment_analysis").fetchone()[0]
        if found is None:
            raise LookupError("no look has been taken yet: run `zcl run`")
        as_of = found
    looks = [r[0] for r in con.execute("SELECT DISTINCT CAST(as_of AS VARCHAR) FROM experiment_analysis ORDER BY 1").fetchall()]
    if as_of not in looks:
        raise LookupError(f"no look as of {as_of}; looks taken: {', '.join(looks[-10:]) or 'none'}")
    cols = ", ".join(f'"{c}"' for c in COMPARISON_COLUMNS)
    rows = con.execute(
        f"SELECT experiment_id, {cols} FROM experiment_analysis WHERE as_of = CAST(? AS DATE) "
        "ORDER BY org_id, experiment_id, NOT is_primary, metric, metric_kind, treatment_arm",
        [as_of],
    ).fetchall()
    experiments: dict[str, list[dict]] = {}
    lead = ("decision", "decision_reason", "cs_low", "cs_high", "cs_p_adjusted")
    for row in rows:
        values = {k: _clean(v) for k, v in zip(COMPARISON_COLUMNS, row[1:])}
        experiments.setdefault(row[0], []).append({**{k: values[k] for k in lead}, **values})
    quarantine: dict[str, dict[str, int]] = {}
    for table, rule, count in con.execute(
        "SELECT source_table, rule, count(*) FROM quarantine GROUP BY ALL ORDER BY ALL"
    ).fetchall():
        quarantine.setdefault(table, {})[rule] = count
    return {
        "as_of": as_of,
        "experiments": [{"experiment_id": k, "comparisons": v} for k, v in experiments.items()],
        "quarantine": quarantine,
        "funnel": funnel_section(con),
    }


def _fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _planned(value: object) -> str:
    if isinstance(value, (int, float)) and math.isfinite(value):
        return f"{value:,.0f}"
    return "unreachable" if value == "inf" else "-"


def render_summary(summary: dict, primary_only: bool = True) -> str:
    """A plain-text table: one line per comparison of the primary metric, led by its decision,
    the confidence sequence and the adjusted p; the fixed-horizon figures after them are
    descriptive. Each line is followed by the decision's reason."""
    count = len(summary["experiments"])
    lines = [f"Look as of {summary['as_of']}: {count} experiment{'' if count == 1 else 's'}"]
    header = (f"{'decision':<12} {'confidence sequence':>21} {'adj. p':>8} {'experiment':<22} {'metric':<12} {'comparison':<24} "
              f"{'n_c':>8} {'n_t':>8} {'control':>20} {'treatment':>20} {'diff':>9} {'descriptive 95%':>21} {'p':>9} "
              f"{'test':<13} {'planned/arm':>11}")
    lines += [header, "-" * len(header)]
    for experiment in summary["experiments"]:
        for c in experiment["comparisons"]:
            if primary_only and not c["is_primary"]:
                continue
            if c["successes_control"] is not None:
                control, treatment = f"{c['successes_control']}/{c['n_control']}", f"{c['successes_treatment']}/{c['n_treatment']}"
            else:
                control = f"{_fmt(c['mean_control'])} (var {_fmt(c['variance_control'], 3)})"
                treatment = f"{_fmt(c['mean_treatment'])} (var {_fmt(c['variance_treatment'], 3)})"
            interval = f"[{_fmt(c['ci_low'])}, {_fmt(c['ci_high'])}]"
            cs = f"[{_fmt(c.get('cs_low'))}, {_fmt(c.get('cs_high'))}]"
            lines.append(
                f"{(c.get('decision') or '-'):<12} {cs:>21} {_fmt(c.get('cs_p_adjusted'), 3):>8} "
                f"{experiment['experiment_id'][:22]:<22} {c['metric'][:12]:<12} {(c['treatment_arm'] + ' vs ' + c['control_arm'])[:24]:<24} "
                f"{_fmt(c['n_control']):>8} {_fmt(c['n_treatment']):>8} {control:>20} {treatment:>20} "
                f"{_fmt(c['difference'], 3):>9} {interval:>21} {_fmt(c['p_value'], 3):>9} {(c['p_method'] or '-'):<13} "
                f"{_planned(c['planned_n_per_arm']):>11}"
            )
            if c.get("decision_reason"):
                lines.append(f"    why: {c['decision_reason']}")
    quarantined = {t: sum(r.values()) for t, r in summary["quarantine"].items()}
    landing_rules = {"bad_landing_path", "unsupported_file_type", "unknown_table"}
    if any(landing_rules & set(rules) for rules in summary["quarantine"].values()):
        lines.append("Some landed files are not read (wrong folder or file type): see quarantine rows of stage 'landing'.")
    lines.append(f"Quarantined rows by table: {quarantined or 'none'} (see table `quarantine` for rule and reason)")
    lines.append("Decisions read the anytime-valid confidence sequence at each comparison's Holm step (docs/statistics.md); "
                 "the 95% intervals and p-values after them are descriptive (fixed horizon) and never decide.")
    if summary.get("funnel"):
        lines.append(render_funnel_section(summary["funnel"]))
    return "\n".join(lines)
