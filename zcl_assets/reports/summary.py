"""The machine-readable look that `zcl report --json` prints (the text report is `reports/text.py`)."""

from __future__ import annotations

import math

import duckdb

from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS
from zcl_assets.reports.funnel import funnel_section

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
