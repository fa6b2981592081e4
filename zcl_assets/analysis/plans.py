"""Planned sample per arm, computed once from a registration and then frozen.

The power analysis is for the method that decides (the confidence sequence): the
fixed-horizon two-sample z sample for the registered baseline, MDE, alpha and power, times
the calibrated inflation ``R`` (``zcl_assets.stats.power.R_DEFAULT``), divided by the
expected verified share, never below the registered minimum (DESIGN section 6). An
experiment with k > 1 treatment arms plans each comparison at alpha / k (Holm is never
less powerful than this Bonferroni split). Power is split across the guardrails.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from zcl_assets.stats.power import R_DEFAULT, planned_sample

PLAN_SCHEMA: dict[str, pl.DataType] = {
    "experiment_id": pl.String,
    "planned_n_per_arm": pl.Float64,
    "n_fixed_per_arm": pl.Float64,
    "comparison_alpha": pl.Float64,
    "inflation": pl.Float64,
    "allocation_ratio": pl.Float64,
    "n_guardrails": pl.Int64,
    "reachable": pl.Boolean,
    "plan_reason": pl.String,
}


def plan_registrations(registrations: pl.DataFrame) -> pl.DataFrame:
    """One plan per registration (``sql/select_registrations.sql`` rows).

    ``planned_n_per_arm`` is the control arm's planned sample in units; the treatment arm's
    is ``allocation_ratio`` times it. Unreachable plans (MDE impossible for the baseline,
    zero verified share) carry ``inf`` and a reason, never an exception.
    """
    if registrations.height == 0:
        return pl.DataFrame(schema=PLAN_SCHEMA)
    rows = []
    for reg in registrations.iter_rows(named=True):
        arms = json.loads(reg["arms"])
        shares = {a["name"]: float(a["allocation"]) for a in arms}
        control_share = shares[reg["control_arm"]]
        treatment_shares = [s for name, s in shares.items() if name != reg["control_arm"]]
        ratio = min(treatment_shares) / control_share
        k = len(treatment_shares)
        guardrails = json.loads(reg["guardrails"] or "[]")
        binary = reg["primary_metric"] == "success"
        plan = planned_sample(
            baseline_mean=reg["baseline_mean"],
            mde=reg["mde"],
            alpha=reg["alpha"] / k,
            power=reg["power"],
            min_samples=reg["min_samples_per_arm"],
            allocation_ratio=ratio,
            baseline_sd=None if binary else reg["baseline_sd"],
            metric="binary" if binary else "continuous",
            inflation=R_DEFAULT,
            verified_share=reg["expected_verified_share"],
            n_guardrails=len(guardrails),
        )
        rows.append(
            {
                "experiment_id": reg["experiment_id"],
                "planned_n_per_arm": float(np.asarray(plan.n_plan)),
                "n_fixed_per_arm": float(np.asarray(plan.n_fixed)),
                "comparison_alpha": reg["alpha"] / k,
                "inflation": float(np.asarray(plan.inflation)),
                "allocation_ratio": ratio,
                "n_guardrails": len(guardrails),
                "reachable": bool(np.asarray(plan.reachable)),
                "plan_reason": str(np.asarray(plan.reason)) or None,
            }
        )
    return pl.DataFrame(rows, schema=PLAN_SCHEMA)
