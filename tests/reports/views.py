"""Hand-made experiment views for the report tests: every figure chosen, nothing read from a warehouse."""

from __future__ import annotations

import datetime as dt

import polars as pl

from zcl_assets.reports.experiments import ExperimentView

QUARANTINE_SCHEMA = {"stage": pl.String, "source_table": pl.String, "rule": pl.String, "rows": pl.Int64}


def comparison(**figures) -> dict:
    """One row of the look: a primary comparison of ``success`` unless told otherwise."""
    row = {
        "metric": "success", "metric_kind": "binary_proportion", "role": "primary", "is_primary": True,
        "direction": "increase", "treatment_arm": "treatment", "control_arm": "control", "decision": "continue",
        "decision_reason": "collecting", "cs_low": -0.05, "cs_high": 0.07, "cs_p_value": 0.4, "cs_p_adjusted": 0.4,
        "difference": 0.01, "ci_low": -0.02, "ci_high": 0.04, "ci_method": "miettinen_nurminen", "p_value": 0.5,
        "p_method": "miettinen_nurminen_score", "relative_lift": 0.02, "lift_ci_low": -0.04, "lift_ci_high": 0.08,
        "n_control": 500, "n_treatment": 500, "successes_control": 250, "successes_treatment": 255,
        "mean_control": 0.5, "mean_treatment": 0.51, "variance_control": 0.25, "variance_treatment": 0.25,
        "srm_fired": False, "srm_sequential_p": 0.8, "srm_chisquare_p": 0.7, "srm_test": "known allocation (Lindon-Malek)",
        "srm_units_control": 510, "srm_units_treatment": 505, "planned_n_per_arm": 1000.0, "information_fraction": 0.5,
        "days_to_plan": 10.0, "baseline_drift": False, "imbalance_p_value": 0.9, "imbalance_fired": False,
        "contract_violation_share": 0.0, "contract_violations_fired": False,
        "contract_violation_p": 1.0, "status": "active", "source": "sessions", "estimand": "difference in proportions",
        "analysis_unit": "session", "guardrail_status": None,
    }
    row.update(figures)
    return row


def history(as_of: str, units: list[tuple[str, int]]) -> pl.DataFrame:
    """The primary comparison's looks: ``(day, units assigned in each arm)``, every other figure fixed."""
    rows = [comparison(as_of=dt.date.fromisoformat(day), srm_units_control=n, srm_units_treatment=n, n_control=n,
                       n_treatment=n) for day, n in units if day <= as_of]
    return pl.DataFrame(rows)


def view(experiment_id: str = "exp", rows: list[dict] | None = None, as_of: str = "2026-10-28",
         looks: pl.DataFrame | None = None, guardrails: list[dict] | None = None, plan: dict | None = None,
         **registration) -> ExperimentView:
    rows = rows if rows is not None else [comparison()]
    reg = {
        "experiment_id": experiment_id, "org_id": "org", "task_type": "task", "kind": "order", "hypothesis": "it helps",
        "primary_metric": "success", "direction": "increase", "control_arm": "control", "mde": 0.05,
        "randomization_unit": "session", "guardrails": guardrails or [],
        "arms": [{"name": "control", "allocation": 0.5}, {"name": "treatment", "allocation": 0.5}],
    }
    reg.update(registration)
    frame = pl.DataFrame(rows)
    if looks is None:
        looks = pl.DataFrame([{**r, "as_of": dt.date.fromisoformat(as_of)} for r in rows if r["is_primary"]])
    return ExperimentView(registration=reg, as_of=as_of, looks=looks.get_column("as_of").n_unique() if looks.height else 0,
                          comparisons=frame, history=looks, quarantine=pl.DataFrame(schema=QUARANTINE_SCHEMA),
                          sessions=1000, verified_sessions=1000, plan=plan or {})
