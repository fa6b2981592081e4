"""Frozen registration: alpha slots, the alpha share, plans in randomization units, fallbacks."""

from __future__ import annotations

import datetime as dt
import json
import math

import polars as pl
import pytest
from scipy import stats

from tests.analysis.looks import T0, cuped_history, registration
from tests.plan_reference import r_reference
from zcl_assets.analysis.registration import (
    DEFAULT_ALPHA_SLOTS,
    RegistrationPolicy,
    allocation_changes,
    decode_arms,
    plan_registrations,
    refusal_quarantine,
)
from zcl_assets.stats.power import FALLBACK_TUNING_UNITS

Z80 = stats.norm.ppf(0.8)
EVENTS = {"experiment_id": pl.String, "status": pl.String, "at": pl.Datetime("us", "UTC"), "reason": pl.String,
          "allocation": pl.String}


def frame(rows):
    return pl.DataFrame(rows, schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                               "registered_at": pl.Datetime("us", "UTC")})


def family(n, **kw):
    return [registration(f"x{i}", ["control", "treatment"], task_type="bugfix",
                         registered_at=T0 + dt.timedelta(hours=i), **kw) for i in range(n)]


def test_default_k_and_the_alpha_share():
    assert DEFAULT_ALPHA_SLOTS == 4
    plans = plan_registrations(frame(family(1)))
    assert plans.row(0, named=True)["alpha_share"] == pytest.approx(0.05 / 4)
    with pytest.raises(ValueError):
        RegistrationPolicy(alpha_slots=0)


def test_a_registration_beyond_k_concurrent_is_refused_and_quarantined_with_a_reason():
    plans = plan_registrations(frame(family(5)))
    got = {r["experiment_id"]: (r["admitted"], r["alpha_slot"]) for r in plans.iter_rows(named=True)}
    assert got == {"x0": (True, 1), "x1": (True, 2), "x2": (True, 3), "x3": (True, 4), "x4": (False, None)}
    lineage = pl.DataFrame({"experiment_id": ["x4"], "partition_day": [dt.date(2026, 10, 1)],
                            "source_file": ["experiments/2026-10-01/a.jsonl"], "source_row": [5]})
    q = refusal_quarantine(plans, lineage, RegistrationPolicy())
    assert q.height == 1
    r = q.row(0, named=True)
    assert (r["source_table"], r["stage"], r["rule"], r["source_row"]) == ("experiments", "registration",
                                                                           "alpha_slots_exhausted", 5)
    assert r["reason"] == ("organization org and task type bugfix already have 4 live experiments (K = 4 alpha "
                           "slots); the registration is refused and every look of it is invalid")
    assert json.loads(r["record"]) == {"experiment_id": "x4"}
    # the quarantine table keeps its shape: these are exactly its columns but the timestamp
    assert q.columns == ["source_table", "partition_day", "source_file", "source_row", "stage", "rule", "reason", "record"]


def test_a_completed_experiment_frees_its_slot_and_frozen_plans_keep_theirs():
    first = plan_registrations(frame(family(4)))
    late = registration("late", ["control", "treatment"], task_type="bugfix", registered_at=T0 + dt.timedelta(days=9))
    events = pl.DataFrame([{"experiment_id": "x2", "status": "completed", "at": T0 + dt.timedelta(days=8),
                            "reason": "done", "allocation": None}], schema=EVENTS)
    existing = first.select("experiment_id", "org_id", "task_type", "admitted", "alpha_slot")
    late_plan = plan_registrations(frame([late]), existing, events).row(0, named=True)
    assert late_plan["admitted"] and late_plan["alpha_slot"] == 3  # the completed experiment's slot
    # a cancelled experiment frees its slot the same way (x1: slot 2)
    cancelled = events.with_columns(pl.lit("x1").alias("experiment_id"), pl.lit("cancelled").alias("status"))
    late_plan = plan_registrations(frame([late]), existing, cancelled).row(0, named=True)
    assert late_plan["admitted"] and late_plan["alpha_slot"] == 2
    # a paused one keeps it
    paused = events.with_columns(pl.lit("paused").alias("status"))
    assert not plan_registrations(frame([late]), existing, paused).row(0, named=True)["admitted"]
    # without the completion the family is full
    refused = plan_registrations(frame([late]), existing, events.clear()).row(0, named=True)
    assert not refused["admitted"]
    assert refused["plan_reason"] == "registration refused: no alpha slot free"


def test_plans_per_arm_for_unequal_three_way_allocation():
    # 50/25/25, control named "baseline": two comparisons at alpha_share / 2, ratio 0.5 each.
    reg = registration("t3", ["baseline", "a", "b"], [0.5, 0.25, 0.25], control="baseline", mde=0.08)
    p = plan_registrations(frame([reg])).row(0, named=True)
    assert p["n_comparisons"] == 2 and p["comparison_alpha"] == pytest.approx(0.0125 / 2)
    # n_c = (z_{1 - 0.00625/2} + z_{0.8})^2 (0.5*0.5 + 0.58*0.42 / 0.5) / 0.08^2, N_plan = ceil(R n_c), R at 0.00625 and 0.8
    n_fixed = (stats.norm.isf(0.00625 / 2) + Z80) ** 2 * (0.25 + 0.58 * 0.42 / 0.5) / 0.08**2
    assert p["planned_n_per_arm"] == math.ceil(r_reference(0.00625, 0.8) * n_fixed)
    units = json.loads(p["planned_units"])
    assert units == {"baseline": p["planned_n_per_arm"], "a": math.ceil(p["planned_n_per_arm"] * 0.5),
                     "b": math.ceil(p["planned_n_per_arm"] * 0.5)}


def test_user_randomized_plans_count_users_with_the_per_user_variance():
    # A continuous metric with several sessions a user: planned in users at the registered sd of
    # the per-user mean (0.12), not the per-session sd.
    reg = registration("u", ["control", "treatment"], metric="score", baseline_mean=0.6, baseline_sd=0.12,
                       randomization_unit="user", mde=0.03)
    p = plan_registrations(frame([reg])).row(0, named=True)
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * 2 * 0.12**2 / 0.03**2
    assert p["planned_unit"] == "users" and p["metric_kind"] == "continuous_mean"
    assert p["planned_n_per_arm"] == math.ceil(r_reference(0.0125, 0.8) * n_fixed)
    # A binary metric averaged over a user's sessions without a registered sd: p(1 - p), the
    # largest variance a per-user mean in [0, 1] can have.
    reg = registration("ub", ["control", "treatment"], randomization_unit="user", mde=0.1)
    p = plan_registrations(frame([reg])).row(0, named=True)
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * 2 * 0.25 / 0.1**2
    assert p["metric_kind"] == "continuous_mean" and p["planned_n_per_arm"] == math.ceil(r_reference(0.0125, 0.8) * n_fixed)
    # one session a user: the unit-level proportion
    reg = registration("u1", ["control", "treatment"], randomization_unit="user", sessions_per_unit="one")
    assert plan_registrations(frame([reg])).row(0, named=True)["metric_kind"] == "binary_proportion"


def test_an_unreachable_plan_states_why_and_its_fallback_tuning():
    reg = registration("bad", ["control", "treatment"], baseline_mean=0.98, mde=0.05)
    p = plan_registrations(frame([reg])).row(0, named=True)
    assert not p["reachable"] and p["planned_n_per_arm"] == math.inf
    assert p["tuning_n_per_arm"] == pytest.approx(FALLBACK_TUNING_UNITS / 2)
    assert "baseline plus MDE not in (0, 1)" in p["plan_reason"] and "only adopt or reject" in p["plan_reason"]


def test_days_to_reach_the_plan_at_the_family_traffic():
    regs = family(2)
    traffic = pl.DataFrame({"experiment_id": ["x0", "x1"], "traffic_per_day": [120.0, 120.0]})
    plans = {r["experiment_id"]: r for r in plan_registrations(frame(regs), traffic=traffic).iter_rows(named=True)}
    first, second = plans["x0"], plans["x1"]
    total = first["planned_n_per_arm"] * 2
    assert first["days_to_plan"] == math.ceil(total / 120.0)  # alone in its family
    assert second["days_to_plan"] == math.ceil(total / 60.0)  # sharing the traffic with x0
    none = plan_registrations(frame(family(1)))
    assert none.row(0, named=True)["days_to_plan"] is None  # no traffic history


def test_unknown_allocation_is_planned_at_equal_shares_and_says_so():
    reg = registration("asos", ["control", "variant_1"], "unknown")
    p = plan_registrations(frame([reg])).row(0, named=True)
    assert not p["allocation_known"] and p["plan_reason"] == "allocation not declared: planned at equal allocation"
    arms = decode_arms(frame([reg]))
    assert arms.get_column("share").is_null().all()


def test_declared_allocation_changes_are_checked():
    regs = frame([registration("c", ["control", "treatment"], [0.9, 0.1])])
    arms = decode_arms(regs)
    at = T0 + dt.timedelta(days=3)
    events = pl.DataFrame([
        {"experiment_id": "c", "status": "active", "at": at, "reason": "", "allocation": '{"control": 0.5, "treatment": 0.5}'},
        {"experiment_id": "c", "status": "active", "at": at + dt.timedelta(days=1), "reason": "", "allocation": "[1, 2]"},
        {"experiment_id": "c", "status": "active", "at": at + dt.timedelta(days=2), "reason": "",
         "allocation": '{"control": 0.5, "other": 0.5}'},
        {"experiment_id": "c", "status": "active", "at": at + dt.timedelta(days=3), "reason": "",
         "allocation": '{"control": 0.7, "treatment": 0.7}'},
        {"experiment_id": "c", "status": "active", "at": T0 - dt.timedelta(days=1), "reason": "",
         "allocation": '{"control": 0.5, "treatment": 0.5}'},
    ], schema=EVENTS)
    valid, invalid = allocation_changes(events, arms, regs)
    assert valid.height == 2 and set(valid.get_column("share").to_list()) == {0.5}
    reasons = invalid.sort("at").get_column("why").to_list()
    assert reasons == [
        "a change must come after the registration",
        "allocation must be a JSON object of arm -> share",
        "allocation names ['control', 'other'] but the registered arms are ['control', 'treatment']",
        "shares must be positive and sum to 1, got {'control': 0.7, 'treatment': 0.7}",
    ]
    assert invalid.sort("at").get_column("allocation").to_list() == events.sort("at").get_column("allocation").to_list()[1:]


def test_an_allocation_change_is_checked_at_its_boundaries():
    # valid: shares off 1 by less than 1e-6, a change one microsecond after the registration;
    # invalid: a zero share, an infinite one, a change at the registration's own time, and any
    # change of a registration that declared no allocation
    regs = frame([registration("c", ["control", "treatment"], [0.9, 0.1]),
                  registration("u", ["control", "treatment"], "unknown")])
    arms = decode_arms(regs)

    def event(eid, at, allocation):
        return {"experiment_id": eid, "status": "active", "at": at, "reason": "", "allocation": allocation}

    later = T0 + dt.timedelta(days=1)
    events = pl.DataFrame([
        event("c", later, '{"control": 0.6, "treatment": 0.4000005}'),
        event("c", T0 + dt.timedelta(microseconds=1), '{"control": 0.5, "treatment": 0.5}'),
        event("c", later + dt.timedelta(days=1), '{"control": 1.0, "treatment": 0.0}'),
        event("c", later + dt.timedelta(days=2), '{"control": 0.5, "treatment": Infinity}'),
        event("c", T0, '{"control": 0.5, "treatment": 0.5}'),
        event("c", later + dt.timedelta(days=3), '{"control": 0.5, "treatment": 0.500002}'),
        event("u", later, '{"control": 0.5, "treatment": 0.5}'),
    ], schema=EVENTS)
    valid, invalid = allocation_changes(events, arms, regs)
    assert sorted(valid.select("at", "arm", "share").rows()) == [
        (T0 + dt.timedelta(microseconds=1), "control", 0.5), (T0 + dt.timedelta(microseconds=1), "treatment", 0.5),
        (later, "control", 0.6), (later, "treatment", 0.4000005)]
    assert sorted(invalid.select("experiment_id", "at", "why").rows()) == [
        ("c", T0, "a change must come after the registration"),
        ("c", later + dt.timedelta(days=1), "shares must be positive and sum to 1, got {'control': 1.0, 'treatment': 0.0}"),
        ("c", later + dt.timedelta(days=2), "shares must be positive and sum to 1, got {'control': 0.5, 'treatment': inf}"),
        ("c", later + dt.timedelta(days=3),
         "shares must be positive and sum to 1, got {'control': 0.5, 'treatment': 0.500002}"),
        ("u", later, "the registration declares no allocation, so a change cannot be stratified"),
    ]
    # no allocation column at all: nothing to check
    valid, invalid = allocation_changes(events.drop("allocation"), arms, regs)
    assert valid.height == invalid.height == 0 and invalid.columns == ["experiment_id", "at", "allocation", "why"]


def test_every_column_of_three_plans_by_hand():
    guards = ('[{"metric": "tokens", "direction": "decrease", "margin": 500.0},'
              ' {"metric": "time_minutes", "direction": "decrease", "margin": 2.0}]')
    regs = [
        registration("a", ["zeta", "baseline", "alpha"], [0.3, 0.5, 0.2], control="baseline", guardrails=guards,
                     expected_verified_share=0.8),
        registration("c", ["control", "treatment"], "unknown", metric="metric_1", baseline_sd=1.0, mde=0.1,
                     registered_at=T0 + dt.timedelta(hours=1)),
        registration("d", ["control", "treatment"], baseline_mean=0.98, mde=0.05, registered_at=T0 + dt.timedelta(hours=2)),
    ]
    plans = {r["experiment_id"]: r for r in plan_registrations(frame(regs)).iter_rows(named=True)}
    common = {"org_id": "org", "admitted": True, "alpha_slot": 1, "alpha_slots": 4, "alpha_share": 0.0125,
              "planned_unit": "sessions", "inflation": r_reference(0.0125, 0.8), "design_effect": 1.0, "traffic_per_day": None,
              "days_to_plan": None, "policy_version": "registration-policy/2",
              # no history: CUPED has no covariate to use and the plan expects no reduction
              "cuped": False, "covariate_window_days": None, "cuped_r2": None, "cuped_planned_r2": 0.0,
              "cuped_basis": "CUPED asked for, but 0 units of the family's last 28 days had a pre-period mean and 30 "
                             "are needed: no adjustment, and the plan counts on no variance reduction"}
    binary_words = "difference in proportions of units with success (treatment - control)"
    # a: two comparisons at 0.0125 / 2; two guardrails share the type II error, per-test power
    # 1 - 0.2 / 3; the arm with the smaller ratio (alpha, 0.2 / 0.5) needs the most control
    # units: n = (z_{1-0.00625/2} + z_{1-0.2/3})^2 (0.25 + 0.55 * 0.45 / 0.4) / 0.05^2, planned
    # ceil(R n / 0.8) (the verified share), R at 0.00625 and that per-test power
    n_a = (stats.norm.isf(0.00625 / 2) + stats.norm.ppf(1 - 0.2 / 3)) ** 2 * (0.25 + 0.2475 / 0.4) / 0.05**2
    r_a = r_reference(0.00625, 1 - 0.2 / 3)
    plan_a = math.ceil(r_a * n_a / 0.8)
    assert plans["a"] == {**common, "inflation": pytest.approx(r_a), "experiment_id": "a", "task_type": "task-a", "n_comparisons": 2,
                          "comparison_alpha": 0.00625, "metric_kind": "binary_proportion", "estimand": binary_words,
                          "allocation_known": True, "planned_n_per_arm": plan_a, "n_fixed_per_arm": pytest.approx(n_a),
                          "tuning_n_per_arm": plan_a,
                          "planned_units": f'{{"zeta": {math.ceil(plan_a * 0.6)}.0, "baseline": {plan_a}.0, '
                                           f'"alpha": {math.ceil(plan_a * 0.4)}.0}}',
                          "verified_share": 0.8, "n_guardrails": 2, "reachable": True, "plan_reason": None,
                          "unit_sd": 0.5, "variance_basis": "p(1 - p) of a proportion"}
    # c: no allocation declared, planned at equal allocation, continuous at sd 1
    n_c = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * 2 * 1.0 / 0.1**2
    plan_c = math.ceil(r_reference(0.0125, 0.8) * n_c)
    assert plans["c"] == {**common, "experiment_id": "c", "task_type": "task-c", "n_comparisons": 1,
                          "comparison_alpha": 0.0125, "metric_kind": "continuous_mean",
                          "estimand": "difference in means of the unit values (per-user means when a user has several "
                                      "sessions)",
                          "allocation_known": False, "planned_n_per_arm": plan_c, "n_fixed_per_arm": pytest.approx(n_c),
                          "tuning_n_per_arm": plan_c, "planned_units": f'{{"control": {plan_c}.0, "treatment": {plan_c}.0}}',
                          "verified_share": 1.0, "n_guardrails": 0, "reachable": True,
                          "plan_reason": "allocation not declared: planned at equal allocation",
                          "unit_sd": 1.0, "variance_basis": "the registered sd"}
    # d: 0.98 + 0.05 leaves (0, 1): unreachable, tuned at 5,000 units shared by the two arms
    d = plans["d"]
    assert math.isnan(d.pop("n_fixed_per_arm"))
    assert d == {**common, "experiment_id": "d", "task_type": "task-d", "n_comparisons": 1, "comparison_alpha": 0.0125,
                 "metric_kind": "binary_proportion", "estimand": binary_words, "allocation_known": True,
                 "planned_n_per_arm": math.inf, "tuning_n_per_arm": 2500.0,
                 "planned_units": '{"control": inf, "treatment": inf}', "verified_share": 1.0, "n_guardrails": 0,
                 "reachable": False,
                 "plan_reason": "baseline plus MDE not in (0, 1); the CS is tuned at 5,000 units in each comparison "
                                "instead (GrowthBook's default tuning), and only adopt or reject can end it",
                 "unit_sd": pytest.approx(math.sqrt(0.98 * 0.02)), "variance_basis": "p(1 - p) of a proportion"}


def test_registrations_at_the_same_instant_take_slots_in_experiment_id_order():
    # five registrations of one family at one instant, landed in reverse order: the slots go by
    # experiment_id (x0 to x3), so the refused one is x4 whatever the order of the rows
    regs = [registration(f"x{i}", ["control", "treatment"], task_type="bugfix", registered_at=T0)
            for i in reversed(range(5))]
    plans = plan_registrations(frame(regs))
    got = {r["experiment_id"]: (r["admitted"], r["alpha_slot"]) for r in plans.iter_rows(named=True)}
    assert got == {"x0": (True, 1), "x1": (True, 2), "x2": (True, 3), "x3": (True, 4), "x4": (False, None)}


def test_registered_shares_that_do_not_sum_to_one_are_normalised():
    # weights 3 : 1 : 1 -> shares 3/5, 1/5, 1/5
    arms = decode_arms(frame([registration("w", ["control", "a", "b"], [3.0, 1.0, 1.0])]))
    assert arms.columns == ["experiment_id", "arm", "share", "is_control", "arm_order"]
    assert arms.get_column("share").to_list() == [pytest.approx(0.6), pytest.approx(0.2), pytest.approx(0.2)]


def test_a_slot_freed_at_the_very_instant_of_a_registration_is_free_for_it():
    # x2 completes at exactly the moment "late" registers: its slot (3) is free by then
    existing = plan_registrations(frame(family(4))).select("experiment_id", "org_id", "task_type", "admitted", "alpha_slot")
    at = T0 + dt.timedelta(days=9)
    late = registration("late", ["control", "treatment"], task_type="bugfix", registered_at=at)
    events = pl.DataFrame([{"experiment_id": "x2", "status": "completed", "at": at, "reason": "done",
                            "allocation": None}], schema=EVENTS)
    plan = plan_registrations(frame([late]), existing, events).row(0, named=True)
    assert plan["admitted"] and plan["alpha_slot"] == 3


def test_an_allocation_change_of_an_unregistered_experiment_is_quarantined_not_a_crash():
    regs = frame([registration("c", ["control", "treatment"], [0.9, 0.1])])
    at = T0 + dt.timedelta(days=2)
    events = pl.DataFrame([{"experiment_id": "ghost", "status": "active", "at": at, "reason": "",
                            "allocation": '{"control": 0.5, "treatment": 0.5}'}], schema=EVENTS)
    valid, invalid = allocation_changes(events, decode_arms(regs), regs)
    assert valid.height == 0
    assert invalid.select("experiment_id", "at", "why").rows() == [
        ("ghost", at, "the registration declares no allocation, so a change cannot be stratified")]


def _history(users, sessions, variance, rate=0.4):
    return pl.DataFrame({"experiment_id": ["h"], "traffic_per_day": [20.0], "verified_share": [0.9],
                         "success_rate": [rate], "history_users": [users], "sessions_per_user": [sessions],
                         "user_rate_variance": [variance]})


def test_a_user_randomized_plan_takes_the_variance_of_a_per_user_mean_from_the_familys_history():
    # 400 users with 4 verified sessions each over the 28 days, success 0.4, the users' rates varying
    # 0.09: a per-user mean varies f = 0.09 / (0.4 x 0.6) = 0.375 x p(1 - p) (design effect f x 4 = 1.5;
    # intraclass correlation (1.5 - 1) / 3 = 0.167). At the registered baseline 0.5 the sd is
    # sqrt(0.25 x 0.375); n = (z_{1-0.0125/2} + z_{0.8})^2 x 2 x 0.09375 / 0.1^2, planned ceil(R n).
    reg = registration("h", ["control", "treatment"], randomization_unit="user", mde=0.1)
    p = plan_registrations(frame([reg]), traffic=_history(400, 4.0, 0.09)).row(0, named=True)
    n_fixed = (stats.norm.isf(0.0125 / 2) + Z80) ** 2 * 2 * 0.25 * 0.375 / 0.1**2
    assert p["unit_sd"] == pytest.approx(math.sqrt(0.25 * 0.375), rel=1e-12)
    assert p["n_fixed_per_arm"] == pytest.approx(n_fixed, rel=1e-12)
    assert p["planned_n_per_arm"] == math.ceil(r_reference(0.0125, 0.8) * n_fixed)
    assert p["design_effect"] == pytest.approx(1.5)
    assert p["variance_basis"] == ("the family's history: 400 users with 4.0 verified sessions each on average; the "
                                   "variance of a user's mean success is 0.375 x p(1 - p) (design effect 1.5)")
    # a third of the bound's plan: the bound p(1 - p) alone would plan 1 / 0.375 times as many users
    bound = plan_registrations(frame([reg])).row(0, named=True)
    assert bound["planned_n_per_arm"] == math.ceil(r_reference(0.0125, 0.8) * n_fixed / 0.375)
    assert bound["design_effect"] == 1.0 and bound["variance_basis"].startswith("p(1 - p), the largest variance")


def test_too_little_history_or_a_session_randomized_plan_keeps_the_bound():
    reg = registration("h", ["control", "treatment"], randomization_unit="user", mde=0.1)
    enough = plan_registrations(frame([reg]), traffic=_history(30, 4.0, 0.09)).row(0, named=True)
    assert enough["design_effect"] == pytest.approx(1.5)  # 30 users are enough
    few = plan_registrations(frame([reg]), traffic=_history(29, 4.0, 0.09)).row(0, named=True)
    assert few["unit_sd"] == 0.5 and few["design_effect"] == 1.0
    assert few["variance_basis"] == ("p(1 - p), the largest variance a per-user mean can have: the family's history "
                                     "has 29 users with a verified session, and 30 are needed to use it")
    # users' rates more alike than independent sessions would make them: held at f = 1 / m (design effect 1);
    # more varied than the bound allows (a sample variance): held at f = 1
    alike = plan_registrations(frame([reg]), traffic=_history(400, 4.0, 0.001)).row(0, named=True)
    assert alike["unit_sd"] == pytest.approx(math.sqrt(0.25 / 4)) and alike["design_effect"] == pytest.approx(1.0)
    wide = plan_registrations(frame([reg]), traffic=_history(400, 4.0, 0.3)).row(0, named=True)
    assert wide["unit_sd"] == pytest.approx(0.5) and wide["design_effect"] == pytest.approx(4.0)
    session = registration("h", ["control", "treatment"], mde=0.1)
    plain = plan_registrations(frame([session]), traffic=_history(400, 4.0, 0.09)).row(0, named=True)
    assert plain["design_effect"] == 1.0 and plain["variance_basis"] == "p(1 - p) of a proportion"


def test_the_look_reads_the_sd_the_plan_froze():
    # the design of the look takes the plan's unit sd (here from the history, f = 0.375), never recomputes it
    from zcl_assets.analysis.design import comparisons

    reg = registration("h", ["control", "treatment"], randomization_unit="user", mde=0.1)
    plans = plan_registrations(frame([reg]), traffic=_history(400, 4.0, 0.09))
    changes = pl.DataFrame(schema={"experiment_id": pl.String, "at": pl.Datetime("us", "UTC"), "arm": pl.String,
                                   "share": pl.Float64})
    comps, _, _ = comparisons(frame([reg]), plans, pl.DataFrame(schema={"experiment_id": pl.String, "metric": pl.String}),
                              changes)
    primary = comps.filter(pl.col("is_primary")).row(0, named=True)
    assert primary["unit_sd"] == pytest.approx(math.sqrt(0.25 * 0.375), rel=1e-12)


def test_a_plan_counts_on_the_cuped_reduction_only_where_asked_for_and_supported():
    regs = [registration("on", ["control", "treatment"], mde=0.1),
            registration("off", ["control", "treatment"], mde=0.1, cuped=False),
            registration("time", ["control", "treatment"], metric="time_minutes", baseline_mean=30.0, baseline_sd=12.0,
                         mde=3.0, direction="decrease")]
    history = pl.concat([cuped_history(e) for e in ("on", "off", "time")])
    plans = {r["experiment_id"]: r for r in plan_registrations(frame(regs), traffic=history).iter_rows(named=True)}
    r, z = r_reference(0.0125, 0.8), stats.norm.isf(0.0125 / 2) + stats.norm.ppf(0.8)
    # the history's R^2: the fit of (x, h) is the three groups' means 0.875, 0.125, 0.5 about 0.5:
    # (40 x 0.375^2 x 2) / (100 x 0.25) = 0.45; its lower 90% bound (Olkin and Finn 1995) at n = 100, k = 2:
    # 0.438660 - 1.281552 x 0.070530 = 0.348272; at 0.5 -> 0.6 the treatment keeps 1 - 0.1 / 0.5 = 0.8 of the
    # covariance, so the difference's variance 0.25 + 0.24 loses 0.348272 x 0.25 x (1 + 0.64): a share 0.291411
    on = plans["on"]
    assert (on["cuped"], on["covariate_window_days"]) == (True, 28) and on["cuped_r2"] == pytest.approx(0.45, rel=1e-12)
    assert on["cuped_planned_r2"] == pytest.approx(0.291411, abs=1e-6)
    # N_plan = R x (1 - rho^2) x n_fixed (Deng, Xu, Kohavi, Walker 2013: CUPED keeps 1 - rho^2 of the variance)
    assert on["planned_n_per_arm"] == math.ceil(r * (1 - on["cuped_planned_r2"]) * z**2 * 0.49 / 0.1**2) == 608
    assert on["inflation"] == pytest.approx(r) and on["n_fixed_per_arm"] == pytest.approx(z**2 * 0.49 / 0.01)
    assert on["days_to_plan"] == math.ceil(2 * 608 / (100 / 28))
    # not asked for: the same history, no reduction, the plan of tests/end_to_end/test_plan_command.py
    off = plans["off"]
    assert (off["cuped"], off["cuped_planned_r2"], off["planned_n_per_arm"]) == (False, 0.0, 857)
    assert off["cuped_basis"].startswith("CUPED not asked for by the registration")
    # a time primary: CUPED applies in the look, but the history's rho^2 is of success: no reduction planned
    time = plans["time"]
    assert (time["cuped"], time["cuped_r2"], time["cuped_planned_r2"]) == (True, None, 0.0)
    assert time["planned_n_per_arm"] == math.ceil(r * z**2 * 288 / 9)


def test_the_plug_in_policy_counts_on_the_history_r2_itself():
    """``cuped_confidence=None`` (what the simulations compare the bound with): rho^2 = 0.45 as measured, so
    the share is 0.45 x 0.25 x 1.64 / 0.49 = 0.376531."""
    plans = plan_registrations(frame([registration("on", ["control", "treatment"], mde=0.1)]), traffic=cuped_history("on"),
                               policy=RegistrationPolicy(cuped_confidence=None))
    assert plans.row(0, named=True)["cuped_planned_r2"] == pytest.approx(0.45 * 0.25 * 1.64 / 0.49, rel=1e-12)
