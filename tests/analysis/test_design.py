"""What each look compares: every comparison row and experiment fact of a registration, by hand."""

from __future__ import annotations

import datetime as dt
import math

import polars as pl
import pytest

from tests.analysis.looks import T0, registration
from zcl_assets.analysis.design import comparisons
from zcl_assets.analysis.metrics import KINDS
from zcl_assets.analysis.registration import RegistrationPolicy, plan_registrations

EVENTS = {"experiment_id": pl.String, "status": pl.String, "at": pl.Datetime("us", "UTC"), "reason": pl.String,
          "allocation": pl.String}
KEY = ["experiment_id", "role", "metric", "metric_kind", "treatment_arm", "control_arm", "direction", "sign", "ratio",
       "margin", "guardrail_order", "is_primary", "counts_successes", "analysis_unit", "source", "allocation"]


def _design(registrations, snapshot_metrics=(), changed=()):
    reg = pl.DataFrame(registrations, schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                                        "registered_at": pl.Datetime("us", "UTC")})
    snaps = pl.DataFrame(list(snapshot_metrics), schema={"experiment_id": pl.String, "metric": pl.String}, orient="row")
    plans = plan_registrations(reg, None, pl.DataFrame(schema=EVENTS), None, RegistrationPolicy(),
                               aggregate_exports=snaps.select("experiment_id").unique())
    changes = pl.DataFrame({"experiment_id": list(changed)}, schema={"experiment_id": pl.String})
    return *comparisons(reg, plans, snaps, changes), plans


def test_every_comparison_of_five_designs_row_by_row():
    guards = ('[{"metric": "tokens", "direction": "decrease", "margin": 500.0},'
              ' {"metric": "time_minutes", "direction": "decrease", "margin": 2.0}]')
    regs = [
        # three arms registered in another order than their names sort, control named baseline
        registration("a", ["zeta", "baseline", "alpha"], [0.3, 0.5, 0.2], control="baseline", guardrails=guards),
        # user-randomized with several sessions a user: per-user mean primary, ratio of sums beside it
        registration("b", ["control", "treatment"], randomization_unit="user", sessions_per_unit="many",
                     registered_at=T0 + dt.timedelta(hours=1)),
        # an aggregate export: no allocation, three metrics (one binary), metric_1 primary
        registration("c", ["control", "treatment"], "unknown", metric="metric_1", baseline_sd=1.0,
                     registered_at=T0 + dt.timedelta(hours=2)),
        # a decrease metric: the signed MDE and the sign are negative
        registration("d", ["control", "treatment"], metric="time_minutes", direction="decrease", mde=1.5,
                     baseline_mean=30.0, baseline_sd=10.0, registered_at=T0 + dt.timedelta(hours=3)),
        # a user-randomized aggregate export: its figures are per arm, not per user, so its
        # binary metric is a proportion and no ratio of sums is added
        registration("e", ["control", "treatment"], "unknown", randomization_unit="user", sessions_per_unit="many",
                     registered_at=T0 + dt.timedelta(hours=4)),
    ]
    comps, experiments, _, plans = _design(regs, [("c", "metric_1"), ("c", "success"), ("c", "metric_2"),
                                       ("e", "success")], changed=["a"])
    got = comps.sort("cid").select(KEY).rows()
    bp, cm, rs = "binary_proportion", "continuous_mean", "ratio_of_sums"
    assert got == [
        # a: guardrails sort before the primary ("guardrail" < "primary"), then metric, then arm order
        # counts_successes: the metric counts successes (success), whatever its kind
        ("a", "guardrail", "time_minutes", cm, "zeta", "baseline", "decrease", -1.0, 0.6, 2.0, 1, False, False,
         "session", "sessions", "declared, changed"),
        ("a", "guardrail", "time_minutes", cm, "alpha", "baseline", "decrease", -1.0, 0.4, 2.0, 1, False, False,
         "session", "sessions", "declared, changed"),
        ("a", "guardrail", "tokens", cm, "zeta", "baseline", "decrease", -1.0, 0.6, 500.0, 0, False, False,
         "session", "sessions", "declared, changed"),
        ("a", "guardrail", "tokens", cm, "alpha", "baseline", "decrease", -1.0, 0.4, 500.0, 0, False, False,
         "session", "sessions", "declared, changed"),
        ("a", "primary", "success", bp, "zeta", "baseline", "increase", 1.0, 0.6, None, -1, True, True,
         "session", "sessions", "declared, changed"),
        ("a", "primary", "success", bp, "alpha", "baseline", "increase", 1.0, 0.4, None, -1, True, True,
         "session", "sessions", "declared, changed"),
        ("b", "primary", "success", cm, "treatment", "control", "increase", 1.0, 1.0, None, -1, True, True,
         "user", "sessions", "declared"),
        ("b", "secondary", "success", rs, "treatment", "control", "increase", 1.0, 1.0, None, -1, False, True,
         "user", "sessions", "declared"),
        ("c", "primary", "metric_1", cm, "treatment", "control", "increase", 1.0, 1.0, None, -1, True, False,
         "session (aggregate export)", "arm_snapshots", "unknown"),
        ("c", "secondary", "metric_2", cm, "treatment", "control", "increase", 1.0, 1.0, None, -1, False, False,
         "session (aggregate export)", "arm_snapshots", "unknown"),
        # a binary metric beside a continuous primary one is a proportion (the kind of its own metric)
        ("c", "secondary", "success", bp, "treatment", "control", "increase", 1.0, 1.0, None, -1, False, True,
         "session (aggregate export)", "arm_snapshots", "unknown"),
        ("d", "primary", "time_minutes", cm, "treatment", "control", "decrease", -1.0, 1.0, None, -1, True, False,
         "session", "sessions", "declared"),
        ("e", "primary", "success", bp, "treatment", "control", "increase", 1.0, 1.0, None, -1, True, True,
         "user (aggregate export)", "arm_snapshots", "unknown"),
    ]
    assert comps.get_column("cid").to_list() == list(range(13))
    for kind, estimand in zip(comps.get_column("metric_kind"), comps.get_column("estimand")):
        assert estimand == KINDS[kind].estimand
    # the MDE in the metric's direction, the treatment's planned units from the control's and the ratio
    for r in comps.iter_rows(named=True):
        assert r["mde_signed"] == (-1.5 if r["experiment_id"] == "d" else 0.05)
        assert r["planned_n_treatment"] == math.ceil(r["planned_n_per_arm"] * r["ratio"])
    # unit sd: registered, else sqrt(p (1 - p)) of a binary primary metric
    sd = dict(comps.select("experiment_id", "unit_sd").unique().rows())
    assert sd == {"a": pytest.approx(0.5), "b": pytest.approx(0.5), "c": 1.0, "d": 10.0, "e": pytest.approx(0.5)}
    facts = experiments.sort("experiment_id").select("experiment_id", "primary_metric", "source", "allocation_known",
                                                    "check_verified").rows()
    assert facts == [("a", "success", "sessions", True, True), ("b", "success", "sessions", True, True),
                     ("c", "metric_1", "arm_snapshots", False, False), ("d", "time_minutes", "sessions", True, True),
                     ("e", "success", "arm_snapshots", False, False)]
    # the SRM prior is tuned at the planned total: control units times (1 + sum of the ratios)
    tuning = comps.group_by("experiment_id").agg(pl.col("tuning_n_total").first(), pl.col("ratio").first())
    n_star = dict(experiments.select("experiment_id", "srm_n_star").rows())
    per_arm = {e: t / (1 + r) for e, t, r in tuning.rows()}
    assert n_star["a"] == pytest.approx(per_arm["a"] * (1 + 0.6 + 0.4))
    # each plan is made for the estimand its look compares (e: an aggregate export of users, whose
    # binary metric is a proportion of users, though registered with several sessions a user)
    planned = dict(plans.select("experiment_id", "metric_kind").rows())
    assert planned == {"a": bp, "b": cm, "c": cm, "d": cm, "e": bp}
    assert planned == dict(comps.filter(pl.col("is_primary")).select("experiment_id", "metric_kind").unique().rows())
    assert n_star["b"] == pytest.approx(per_arm["b"] * 2)
