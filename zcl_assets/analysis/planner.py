"""What an experiment would cost, asked before it is registered (``zcl plan``).

A request is turned into the registration it would be (one row in the form of
``sql/select_registrations.sql``) and planned by the same code that freezes a landed
registration (:func:`~zcl_assets.analysis.registration.plan_registrations`), against the
family's frozen plans and experiment events in the warehouse and its traffic in the 28 days
before the request (``sql/measure_family_traffic.sql``). So the planner's figures are the
figures the registration would get, by construction:

* the alpha slot and share (alpha / K), or that no slot is free, and the day the first live
  experiment of the family is expected to reach its plan (its latest look's days left, else
  its frozen plan's) and so free its slot;
* the planned units per arm (R x (1 - rho^2) x n_fixed / v, never below the minimum; the
  factor 1 - rho^2 where CUPED applies and the family's history supports a reduction, as a
  registration asks for by default) and the days to reach them at the family's traffic,
  shared among its live experiments;
* inverted, the smallest MDE whose plan is reached within a given number of days, found by
  bisection on the same plan (the plan's units fall as the MDE grows).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import polars as pl

from sql import load_sql
from zcl_assets.analysis.metrics import metric_spec
from zcl_assets.analysis.registration import RegistrationPolicy, live_at, plan_registrations
from zcl_assets.analysis.schema import FAMILY_OUTLOOK, OUTLOOK_DAYS
from zcl_assets.stats.power import mde_reachable
from zcl_assets.warehouse import has_table

PLANNED_ID = "(planned)"
"""Experiment id of the request's registration (never landed, never stored)."""

_REGISTRATION_SCHEMA = {
    "experiment_id": pl.String, "org_id": pl.String, "task_type": pl.String, "kind": pl.String,
    "hypothesis": pl.String, "arms": pl.String, "control_arm": pl.String, "primary_metric": pl.String,
    "direction": pl.String, "mde": pl.Float64, "alpha": pl.Float64, "power": pl.Float64,
    "baseline_mean": pl.Float64, "baseline_sd": pl.Float64, "min_samples_per_arm": pl.Int64,
    "randomization_unit": pl.String, "sessions_per_unit": pl.String, "guardrails": pl.String,
    "metric_caps": pl.String, "expected_verified_share": pl.Float64, "cuped": pl.Boolean,
    "registered_at": pl.Datetime("us", "UTC"),
}


@dataclass(frozen=True)
class PlanRequest:
    """An experiment as it would be registered (the registration's fields, DESIGN section 6).

    ``mde`` is absolute and positive, in the metric's unit; ``direction`` says which way is
    beneficial. ``treatment_arms`` arms share the traffic equally with the control arm.
    """

    org_id: str
    task_type: str
    metric: str
    baseline_mean: float
    mde: float
    direction: str = "increase"
    baseline_sd: float | None = None
    treatment_arms: int = 1
    randomization_unit: str = "session"
    alpha: float = 0.05
    power: float = 0.8
    min_samples_per_arm: int = 100
    verified_share: float = 1.0
    guardrails: int = 0
    cuped: bool = True
    """Ask for CUPED, as a registration does by default: the plan counts on the variance reduction the
    family's history supports (``registration.cuped_basis`` says how much, or why none)."""
    at: dt.datetime | None = None
    """When it would register (UTC; default now): the traffic is the 28 days before."""


def registration(request: PlanRequest, mde: float | None = None) -> pl.DataFrame:
    """The one-row registration frame of ``request`` (at ``mde`` when given)."""
    names = ["control", *(f"treatment_{i}" if request.treatment_arms > 1 else "treatment"
                          for i in range(1, request.treatment_arms + 1))]
    arms = [{"name": n, "payload": {}, "allocation": 1 / len(names)} for n in names]
    guardrails = [{"metric": "tokens", "direction": "decrease", "margin": 1.0}] * request.guardrails
    row = {
        "experiment_id": PLANNED_ID, "org_id": request.org_id, "task_type": request.task_type, "kind": "order",
        "hypothesis": "planned before registration", "arms": json.dumps(arms), "control_arm": "control",
        "primary_metric": request.metric, "direction": request.direction, "mde": request.mde if mde is None else mde,
        "alpha": request.alpha, "power": request.power, "baseline_mean": request.baseline_mean,
        "baseline_sd": request.baseline_sd, "min_samples_per_arm": request.min_samples_per_arm,
        "randomization_unit": request.randomization_unit, "sessions_per_unit": "many",
        "guardrails": json.dumps(guardrails), "metric_caps": "{}", "expected_verified_share": request.verified_share,
        "cuped": request.cuped, "registered_at": request.at or dt.datetime.now(dt.UTC),
    }
    return pl.DataFrame([row], schema=_REGISTRATION_SCHEMA)


@dataclass(frozen=True)
class FamilyState:
    """What the warehouse knows of the request's family: frozen plans, events, traffic a day,
    the slots K its plans were frozen with, when each live experiment should reach its plan, and
    ``live(experiment_id, t)``: whether it holds its slot at ``t`` (from the events)."""

    existing: pl.DataFrame
    events: pl.DataFrame | None
    traffic: pl.DataFrame | None
    policy: RegistrationPolicy
    expected_ends: dict[str, dt.date | None]
    live: Callable[[str, dt.datetime], bool] = lambda eid, t: True


def _numbered(requests: list[PlanRequest], indices: list[int], mde: float | None = None) -> pl.DataFrame:
    """The registrations of ``requests[i]`` for ``i`` in ``indices``, each with its own id
    ``"(planned) i"``, so that many can be measured or planned at once."""
    return pl.concat([registration(requests[i], mde).with_columns(pl.lit(f"{PLANNED_ID} {i}").alias("experiment_id"))
                      for i in indices])


def family_state(con: duckdb.DuckDBPyConnection | None, request: PlanRequest, policy: RegistrationPolicy) -> FamilyState:
    """Read the family of ``request`` (none when ``con`` is None: a warehouse not built yet)."""
    return family_states(con, [request], policy)[0]


def family_states(con: duckdb.DuckDBPyConnection | None, requests: list[PlanRequest],
                  policy: RegistrationPolicy, traffic: pl.DataFrame | None = None) -> list[FamilyState]:
    """The families of ``requests``, each query run once for all of them (a night's outlook asks
    for every family at once). ``traffic``: each request's traffic already known (a row per
    request, ``experiment_id`` = ``"(planned) i"``); measured from the sessions when None."""
    empty_plans = pl.DataFrame(schema={"experiment_id": pl.String, "org_id": pl.String, "task_type": pl.String,
                                       "admitted": pl.Boolean, "alpha_slot": pl.Int64})
    if not requests or con is None or not _has_tables(con, "experiment_plans", "staged_sessions",
                                                      "staged_experiment_events", "verification_records"):
        return [FamilyState(empty_plans, None, None, policy, {}) for _ in requests]
    plans = con.execute("SELECT experiment_id, org_id, task_type, admitted, alpha_slot, alpha_slots FROM experiment_plans").pl()
    events = con.execute(load_sql("select_experiment_events")).pl()
    traffic = traffic if traffic is not None else _measured_traffic(con, requests)
    ends = _expected_ends(con)
    live = live_at(events)
    out = []
    for i, request in enumerate(requests):
        family = (pl.col("org_id") == request.org_id) & (pl.col("task_type") == request.task_type)
        existing = plans.filter(family)
        slots = existing.get_column("alpha_slots").drop_nulls()
        own = RegistrationPolicy(alpha_slots=int(slots.max())) if slots.len() else policy
        seen = traffic.filter(pl.col("experiment_id") == f"{PLANNED_ID} {i}").with_columns(
            pl.lit(PLANNED_ID).alias("experiment_id"))
        known = {eid: end for eid, (org, task, end) in ends.items() if (org, task) == (request.org_id, request.task_type)}
        out.append(FamilyState(existing.drop("alpha_slots"), events, seen, own, known, live))
    return out


def _measured_traffic(con: duckdb.DuckDBPyConnection, requests: list[PlanRequest]) -> pl.DataFrame:
    """What each request's family showed before it would register (``sql/measure_family_traffic.sql``)."""
    regs = _numbered(requests, list(range(len(requests))))
    con.register("new_registrations", regs.select("experiment_id", "org_id", "task_type", "randomization_unit",
                                                  "registered_at"))
    try:
        return con.execute(load_sql("measure_family_traffic")).pl()
    finally:
        con.unregister("new_registrations")


def _has_tables(con: duckdb.DuckDBPyConnection, *names: str) -> bool:
    found = {n for (n,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}
    return set(names) <= found


def _expected_ends(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str, dt.date | None]]:
    """Per admitted experiment: its family and the day it should reach its plan (its latest look's
    days left, else its frozen plan's days from registration; None: not known)."""
    if not _has_tables(con, "experiment_analysis", "staged_experiments"):
        return {}
    return {eid: (org, task, end) for eid, org, task, end in con.execute(load_sql("select_family_expected_ends")).fetchall()}


def plan_at(request: PlanRequest, family: FamilyState, mde: float | None = None) -> dict:
    """The plan the registration of ``request`` would freeze (at ``mde`` when given), as a dict of the plan's columns."""
    return plans_at([request], [family], mde)[0]


def live_holders(request: PlanRequest, family: FamilyState) -> list[str]:
    """The family's experiments that hold a slot when the request would register (admitted, not
    completed or cancelled by then): they share its traffic."""
    at = registration(request).item(0, "registered_at")
    return [eid for eid, admitted in family.existing.select("experiment_id", "admitted").iter_rows()
            if admitted and family.live(eid, at)]


def experiments_sharing(request: PlanRequest, family: FamilyState, plan: dict) -> int:
    """The experiments that would share the family's traffic: its live ones, and the request's
    own when it gets a slot."""
    return len(live_holders(request, family)) + (1 if plan["admitted"] else 0)


def next_free_slot(request: PlanRequest, family: FamilyState) -> dt.date | None:
    """When no slot is free: the earliest day a live experiment of the family should reach its
    plan (None when none of them has a known end)."""
    known = [family.expected_ends[eid] for eid in live_holders(request, family) if family.expected_ends.get(eid)]
    return min(known) if known else None


def mde_within(request: PlanRequest, family: FamilyState, days: float, iterations: int = 60) -> float | None:
    """The smallest MDE whose plan is reached within ``days`` at the family's traffic (bisection on
    the plan; None when even the largest MDE the metric allows is not, or the traffic is unknown)."""
    def reached(mde: float) -> bool:
        left = plan_at(request, family, mde)["days_to_plan"]
        return left is not None and math.isfinite(left) and left <= days

    if metric_spec(request.metric).binary:  # a rate: the MDE leaves (0, 1) beyond the baseline's distance to its end
        high = (1 - request.baseline_mean if request.direction == "increase" else request.baseline_mean) - 1e-9
    else:
        high = max(abs(request.baseline_mean), request.baseline_sd or 1.0) * 100
    if high <= 0 or not reached(high):
        return None
    low = 0.0
    for _ in range(iterations):
        mid = (low + high) / 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    return high


def answer(request: PlanRequest, family: FamilyState, days: float | None = None) -> dict:
    """Everything ``zcl plan`` says, JSON-ready: the frozen plan's figures, the family's live
    experiments sharing its traffic, the next free slot when none is, and the MDE within ``days``."""
    plan = plan_at(request, family)
    at = registration(request).item(0, "registered_at")
    planned = plan["planned_n_per_arm"]
    out = {
        "org_id": request.org_id, "task_type": request.task_type, "metric": request.metric,
        "estimand": plan["estimand"], "randomization_unit": request.randomization_unit,
        "treatment_arms": request.treatment_arms, "as_of": at.isoformat(), "admitted": plan["admitted"],
        "alpha_slot": plan["alpha_slot"], "alpha_slots": plan["alpha_slots"], "alpha_share": plan["alpha_share"],
        "comparison_alpha": plan["comparison_alpha"], "power": request.power,
        "planned_n_per_arm": planned if math.isfinite(planned) else None,
        "planned_units": json.loads(plan["planned_units"]) if math.isfinite(planned) else None,
        "planned_unit": plan["planned_unit"], "n_fixed_per_arm": plan["n_fixed_per_arm"],
        "inflation": plan["inflation"], "verified_share": plan["verified_share"], "reachable": plan["reachable"],
        "unit_sd": plan["unit_sd"], "design_effect": plan["design_effect"], "variance_basis": plan["variance_basis"],
        "cuped_asked": request.cuped, "cuped": plan["cuped"], "cuped_r2": plan["cuped_r2"],
        "cuped_planned_r2": plan["cuped_planned_r2"], "cuped_basis": plan["cuped_basis"],
        "plan_reason": plan["plan_reason"], "traffic_per_day": plan["traffic_per_day"],
        "experiments_sharing_traffic": experiments_sharing(request, family, plan),
        "days_to_plan": plan["days_to_plan"], "next_free_slot": None, "days": days, "mde_within_days": None,
    }
    if not plan["admitted"]:
        free = next_free_slot(request, family)
        out["next_free_slot"] = free.isoformat() if free else None
    if days is not None:
        out["mde_within_days"] = mde_within(request, family, days)
    return out


def family_outlook(con: duckdb.DuckDBPyConnection, as_of: dt.date, policy: RegistrationPolicy) -> pl.DataFrame:
    """What each family with sessions in the 28 days before the end of ``as_of`` could detect now.

    For every organization and task type: the traffic, verified share and success rate of those
    28 days (``sql/select_family_traffic.sql``: the figures ``sql/measure_family_traffic.sql``
    gives a registration at the night's end, summed from loop health's daily counts; not the
    CUPED sums, which need every unit's history, so the outlook counts on no variance reduction
    where ``zcl plan`` would), and what a
    one-treatment, session-randomized experiment on ``success`` registered at the end of the
    night would get: its slot (or the day the next one frees), the level and R it would be
    planned at, its control units within each horizon of ``OUTLOOK_DAYS`` at its share of the
    traffic, and the smallest MDE whose plan those units reach
    (:func:`~zcl_assets.stats.power.mde_reachable`, the plan inverted).

    Returns:
        One row per family, in the columns of ``schema.FAMILY_OUTLOOK``.
    """
    end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    if not _has_tables(con, "experiment_plans") or not has_table(con, "internal.loop_health_days"):
        return pl.DataFrame(schema=FAMILY_OUTLOOK.polars)
    seen = con.execute(load_sql("select_family_traffic"), {"end": end}).pl()
    requests = [PlanRequest(org_id=org, task_type=task, metric="success", baseline_mean=0.5, mde=0.1, at=end)
                for org, task in seen.select("org_id", "task_type").iter_rows()]
    traffic = seen.drop("org_id", "task_type").with_columns(
        pl.format("{} {}", pl.lit(PLANNED_ID), pl.int_range(pl.len())).alias("experiment_id"))
    families = family_states(con, requests, policy, traffic)
    # a slot, level and R do not depend on the baseline or the MDE: one plan per family at a placeholder
    rows = [_outlook(r, f, plan) | {"as_of": as_of} for r, f, plan in zip(requests, families, plans_at(requests, families))]
    return pl.DataFrame(rows, schema=FAMILY_OUTLOOK.polars, orient="row") if rows else pl.DataFrame(
        schema=FAMILY_OUTLOOK.polars)


def plans_at(requests: list[PlanRequest], families: list[FamilyState], mde: float | None = None) -> list[dict]:
    """The plans the registrations of ``requests`` would freeze, each against its own family, in
    one ``plan_registrations`` call per number of slots K (plans of different families do not
    interact)."""
    out: list[dict | None] = [None] * len(requests)
    for slots in sorted({f.policy.alpha_slots for f in families}):
        chosen = [i for i, f in enumerate(families) if f.policy.alpha_slots == slots]
        ids = {i: f"{PLANNED_ID} {i}" for i in chosen}
        regs = _numbered(requests, chosen, mde)
        existing = pl.concat([families[i].existing for i in chosen]).unique("experiment_id", keep="first", maintain_order=True)
        traffic = pl.concat([families[i].traffic.with_columns(pl.lit(ids[i]).alias("experiment_id")) for i in chosen])
        plans = plan_registrations(regs, existing, families[chosen[0]].events, traffic, families[chosen[0]].policy)
        by_id = {r["experiment_id"]: r for r in plans.iter_rows(named=True)}
        for i in chosen:
            out[i] = by_id[ids[i]] | {"experiment_id": PLANNED_ID}
    return out


def _outlook(request: PlanRequest, family: FamilyState, plan: dict) -> dict:
    """One family's outlook row (see :func:`family_outlook`)."""
    seen = family.traffic.row(0, named=True)
    baseline, share = seen["success_rate"], seen["verified_share"]
    usable = baseline is not None and 0 < baseline < 1 and share is not None and share > 0
    sharing = max(experiments_sharing(request, family, plan), 1)
    free = None if plan["admitted"] else next_free_slot(request, family)
    out = {"org_id": request.org_id, "task_type": request.task_type, "traffic_per_day": plan["traffic_per_day"],
           "verified_share": share, "baseline": baseline, "alpha_slots": plan["alpha_slots"],
           "slot_free": plan["admitted"], "next_free_slot": free, "experiments_sharing": sharing,
           "comparison_alpha": plan["comparison_alpha"], "inflation": plan["inflation"]}
    for days in OUTLOOK_DAYS:  # the plan's days_to_plan inverted: units per arm = days x traffic / sharing / 2 arms
        units = math.floor(days * (plan["traffic_per_day"] or 0.0) / sharing / 2)
        out[f"units_per_arm_{days}d"] = float(units)
        reachable = usable and units >= request.min_samples_per_arm
        out[f"mde_{days}d"] = mde_reachable(units, baseline, out["comparison_alpha"], request.power, plan["inflation"],
                                            share) if reachable else None
    return out


__all__ = ["PLANNED_ID", "FamilyState", "PlanRequest", "answer", "experiments_sharing", "family_outlook", "family_state",
           "family_states", "plans_at", "live_holders", "mde_within",
           "next_free_slot", "plan_at", "registration"]
