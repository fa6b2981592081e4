"""Registration, frozen: alpha slots per organization and task type, and the planned sample.

DESIGN section 6, *Family* and *Planned sample*:

* Each organization and task type (a family) has ``K`` concurrent slots
  (:data:`DEFAULT_ALPHA_SLOTS`, configurable). A registration takes the lowest free slot and
  the alpha share ``alpha / K``, and keeps both for good (also when reopened). A
  registration that finds all ``K`` slots held by experiments still live (no ``completed``
  or ``cancelled`` as their last event at its registration time) is refused: it gets a
  plan row with ``admitted = False`` and a ``quarantine`` row (stage ``registration``,
  rule ``alpha_slots_exhausted``); every look of it is ``invalid`` with that reason.
* The same alpha share serves the plan, the confidence sequence and the Holm step. With
  ``k`` treatment arms, the plan and the CS tuning use ``alpha_share / k`` (Holm's first
  step; Holm is never less powerful than this Bonferroni split).
* The planned sample counts randomization units (users for a user-randomized experiment,
  planned with the registered sd of the per-user value; sessions otherwise):
  ``N_plan = max(min_samples, ceil(R * DE * (1 - rho^2) * n_fixed / v))`` for the control arm,
  the largest over the comparisons; each treatment arm is planned at its share ratio times it.
* CUPED (:func:`cuped_applies`): asked for by the registration (its default) and supported by
  the family's history (:data:`MIN_HISTORY_USERS` units of the 28 days before registration
  whose user had a verified session in the 28 days before those). Then the look adjusts
  every comparison for the unit's pre-experiment mean over :data:`COVARIATE_WINDOW_DAYS`
  (``stats.cuped``). The plan of a success primary records the variance share the history's
  covariate explained (``cuped_r2``, the history's
  :func:`~zcl_assets.stats.cuped.explained_share`) and counts on a lower confidence bound of it
  (:data:`CUPED_PLAN_CONFIDENCE`, :func:`~zcl_assets.stats.cuped.explained_share_bound`, at
  most :data:`MAX_PLANNED_R2`), turned into the share of the difference's variance the
  covariate removes (``cuped_planned_r2``, :func:`~zcl_assets.stats.cuped.difference_share`,
  the treatment arm keeping ``1 - |d| / (1 - p)`` of a rate's covariance): the planned sample
  is ``R (1 - cuped_planned_r2) n_fixed / v``, and ``cuped_basis`` says in words what it counts
  on, or why nothing. Power at such plans is measured in ``benchmarks/simulate_cuped.py``.
* An unreachable plan (``n_plan = inf``, reason stored) still gets a valid confidence
  sequence, tuned at :data:`~zcl_assets.stats.power.FALLBACK_TUNING_UNITS` units in each
  comparison (both arms together), and says that only adopt or reject can end it.
* Days to reach the plan: at the family's traffic in the 28 days before registration,
  shared evenly by its concurrent experiments (null when there is no history).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from zcl_assets.analysis.metrics import KINDS, counts_successes, kind_estimand, primary_kind_column, several_sessions_a_unit
from zcl_assets.analysis.schema import EXPERIMENT_PLANS
from zcl_assets.stats.cuped import Moments, difference_share, explained_share, explained_share_bound
from zcl_assets.stats.multiplicity import alpha_slot
from zcl_assets.stats.power import FALLBACK_TUNING_UNITS, arm_variances, inflation_at, per_test_power, planned_sample

DEFAULT_ALPHA_SLOTS = 4
"""K: concurrent experiments per organization and task type. Seed note 000's generator
opens up to eight live tests per task type; eight slots would plan each at alpha/8, about
1.4 times the sample of alpha/4 (at power 0.8), which low-traffic task types cannot reach.
Four keeps samples reachable and the family-wise error at the registered alpha."""

POLICY_VERSION = "registration-policy/2"
"""2: the planned sample counts on the CUPED reduction the family's history supports (1: it recorded it only)."""
TRAFFIC_DAYS = 28
COVARIATE_WINDOW_DAYS = 28
"""Days before an experiment's first assignment whose verified sessions give a unit's CUPED covariate."""
MAX_PLANNED_R2 = 0.9
"""The largest variance reduction a plan counts on (rho^2): a history that seems to explain
nearly everything is more likely a small one, and a plan of a tenth of the units is bold enough."""

ARMS_DTYPE = pl.List(pl.Struct({"name": pl.String, "allocation": pl.Float64}))
GUARDRAILS_DTYPE = pl.List(pl.Struct({"metric": pl.String, "direction": pl.String, "margin": pl.Float64}))


CUPED_PLAN_CONFIDENCE = 0.9
"""One-sided confidence of the lower bound of the history's ``rho^2`` that a plan counts on
(``stats.cuped.explained_share_bound``): the history's own ``R^2`` over-states it in a small
history, and a plan that took it at its word lost the registered power there
(``benchmarks/simulate_cuped.py``, docs/statistics.md section 13)."""


@dataclass(frozen=True)
class RegistrationPolicy:
    """The registration policy: ``alpha_slots`` concurrent experiments per family, and the
    confidence of the CUPED reduction a plan counts on (None: the history's ``R^2`` as
    measured, which only the simulations use, to show what the bound is for)."""

    alpha_slots: int = DEFAULT_ALPHA_SLOTS
    version: str = POLICY_VERSION
    cuped_confidence: float | None = CUPED_PLAN_CONFIDENCE

    def __post_init__(self):
        if int(self.alpha_slots) != self.alpha_slots or self.alpha_slots < 1:
            raise ValueError(f"alpha_slots must be a positive integer, got {self.alpha_slots!r}")


def decode_arms(registrations: pl.DataFrame) -> pl.DataFrame:
    """One row per (experiment, arm): ``experiment_id, arm, share, is_control, arm_order``.

    ``share`` is null for every arm of a registration that declares no allocation (aggregate
    exports); shares are normalised to sum 1 otherwise.
    """
    arms = (
        registrations.select("experiment_id", "control_arm", pl.col("arms").str.json_decode(ARMS_DTYPE).alias("a"))
        .explode("a")
        .with_columns(pl.int_range(pl.len()).over("experiment_id").alias("arm_order"))
        .select(
            "experiment_id",
            pl.col("a").struct.field("name").alias("arm"),
            pl.col("a").struct.field("allocation").alias("share"),
            (pl.col("a").struct.field("name") == pl.col("control_arm")).alias("is_control"),
            "arm_order",
        )
    )
    known = pl.col("share").is_not_null().all().over("experiment_id")
    return arms.with_columns(
        pl.when(known).then(pl.col("share") / pl.col("share").sum().over("experiment_id")).alias("share")
    )


def decode_guardrails(registrations: pl.DataFrame) -> pl.DataFrame:
    """One row per (experiment, guardrail): ``experiment_id, metric, direction, margin, guardrail_order``."""
    return (
        registrations.select(
            "experiment_id", pl.col("guardrails").fill_null("[]").str.json_decode(GUARDRAILS_DTYPE).alias("g")
        )
        .explode("g")
        .filter(pl.col("g").is_not_null())
        .with_columns(pl.int_range(pl.len()).over("experiment_id").alias("guardrail_order"))
        .select(
            "experiment_id",
            pl.col("g").struct.field("metric").alias("metric"),
            pl.col("g").struct.field("direction").alias("direction"),
            pl.col("g").struct.field("margin").alias("margin"),
            "guardrail_order",
        )
    )


def live_at(events: pl.DataFrame) -> Callable[[str, dt.datetime], bool]:
    """``live(experiment_id, t)``: the experiment's last event at or before ``t`` is neither
    ``completed`` nor ``cancelled`` (so it holds its alpha slot), from staged experiment events."""
    statuses: dict[str, list[tuple]] = {}
    for eid, status, at in events.sort("at", "experiment_id").select("experiment_id", "status", "at").iter_rows():
        statuses.setdefault(eid, []).append((at, status))

    def live(eid: str, t: dt.datetime) -> bool:
        last = None
        for at, status in statuses.get(eid, []):
            if at <= t:
                last = status
        return last not in ("completed", "cancelled")

    return live


def assign_slots(
    new: pl.DataFrame, existing: pl.DataFrame, events: pl.DataFrame, policy: RegistrationPolicy
) -> pl.DataFrame:
    """Alpha slots of new registrations, in registration order, against the frozen plans.

    Args:
        new: registrations without a plan (``experiment_id, org_id, task_type, registered_at``).
        existing: frozen plans (``experiment_id, org_id, task_type, admitted, alpha_slot``)
            with their ``registered_at``.
        events: ``experiment_id, status, at`` (staged experiment events).
        policy: the registration policy.

    Returns:
        ``experiment_id, admitted, alpha_slot, concurrent`` (live experiments of the family,
        this one included when admitted).
    """
    # Registrations are few (one per hypothesis); a pass in time order is the definition.
    live = live_at(events)
    holders: dict[tuple, list[tuple[str, int]]] = {}
    for eid, org, task, slot in existing.filter(pl.col("admitted")).select(
        "experiment_id", "org_id", "task_type", "alpha_slot"
    ).iter_rows():
        holders.setdefault((org, task), []).append((eid, int(slot)))
    rows = []
    for eid, org, task, at in new.sort("registered_at", "experiment_id").select(
        "experiment_id", "org_id", "task_type", "registered_at"
    ).iter_rows():
        family = holders.setdefault((org, task), [])
        taken = {slot for other, slot in family if live(other, at)}
        free = [s for s in range(1, policy.alpha_slots + 1) if s not in taken]
        if free:
            family.append((eid, free[0]))
            rows.append((eid, True, free[0], len(taken) + 1))
        else:
            rows.append((eid, False, None, len(taken)))
    return pl.DataFrame(rows, schema={"experiment_id": pl.String, "admitted": pl.Boolean, "alpha_slot": pl.Int64,
                                      "concurrent": pl.Int64}, orient="row")


def arm_ratios(arms: pl.DataFrame) -> pl.DataFrame:
    """Each arm's units planned per control unit: its share over the control's (1 when the
    allocation is unknown). ``decode_arms`` rows with a ``ratio`` column."""
    control = arms.filter("is_control").select("experiment_id", pl.col("share").alias("share_c"))
    return arms.join(control, on="experiment_id").with_columns(
        pl.coalesce(pl.col("share") / pl.col("share_c"), pl.lit(1.0)).alias("ratio"))


def treatment_ratios(arms: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, treatment_arm, arm_order, ratio`` of every treatment arm (:func:`arm_ratios`)."""
    return arm_ratios(arms).filter(~pl.col("is_control")).select(
        "experiment_id", pl.col("arm").alias("treatment_arm"), "arm_order", "ratio")


def _plan_comparisons(registrations: pl.DataFrame, slots: pl.DataFrame, policy: "RegistrationPolicy",
                      aggregate_exports: pl.DataFrame | None, traffic: pl.DataFrame) -> pl.DataFrame:
    """One row per (registration, treatment arm) with what its plan needs: the alpha of the
    comparison (the slot's share over the arms), the kind of its primary metric, its sd (from
    the family's history where it has one, :func:`unit_sd`)."""
    guardrails = decode_guardrails(registrations).group_by("experiment_id").agg(pl.len().alias("n_guardrails"))
    comparisons = (
        treatment_ratios(decode_arms(registrations))
        .with_columns(pl.len().over("experiment_id").alias("n_comparisons"))
        .join(registrations, on="experiment_id")
        .join(guardrails, on="experiment_id", how="left")
        .join(slots, on="experiment_id")
        .join(traffic, on="experiment_id", how="left")
        .with_columns(pl.col("n_guardrails").fill_null(0), pl.col("history_users").fill_null(0))
    )
    r2 = history_r2(comparisons)
    bound = explained_share_bound(r2, comparisons.get_column("cuped_n").cast(pl.Float64).to_numpy(),
                                  policy.cuped_confidence)
    measured = pl.col("cuped") & counts_successes(pl.col("primary_metric"))  # the history measures successes
    comparisons = comparisons.with_columns(pl.col("cuped").fill_null(True).alias("cuped_asked"),
                                           cuped_applies().alias("cuped")).with_columns(
        pl.when(measured).then(pl.Series("r2", r2).fill_nan(None)).alias("cuped_r2"),
        pl.when(measured).then(pl.Series("bound", bound).fill_nan(0.0).clip(0.0, MAX_PLANNED_R2)).otherwise(0.0)
        .alias("cuped_bound"))
    exported = (aggregate_exports.get_column("experiment_id") if aggregate_exports is not None
                else pl.Series("experiment_id", [], dtype=pl.String))  # pragma: no mutate
    several = several_sessions_a_unit(pl.col("experiment_id").is_in(exported.implode()))
    alpha_share = alpha_slot(comparisons.get_column("alpha").to_numpy(), policy.alpha_slots)
    return comparisons.with_columns(
        pl.Series("alpha_share", np.atleast_1d(alpha_share), dtype=pl.Float64),
        primary_kind_column(pl.col("primary_metric"), several).alias("metric_kind"),
        mde_signed().alias("mde_signed"),
        unit_sd().alias("unit_sd"),
        variance_basis().alias("variance_basis"),
        pl.when(history_known()).then(history_factor() * pl.col("sessions_per_user")).otherwise(pl.lit(1.0))
        .alias("design_effect"),
    ).with_columns((pl.col("alpha_share") / pl.col("n_comparisons")).alias("comparison_alpha"))


def _planned_samples(comparisons: pl.DataFrame) -> pl.DataFrame:
    """The planned control-arm sample of each comparison by its kind's power formula
    (``n_plan_c``, ``n_fixed_c``, the inflation ``r_c`` calibrated at its alpha and per-test
    power, the reason ``why`` when unreachable, and ``cuped_planned_r2``: the share of the
    difference's variance the plan counts on CUPED to remove, from the history's bound
    ``cuped_bound``, :func:`~zcl_assets.stats.cuped.difference_share`)."""
    n_plan = np.full(comparisons.height, np.inf)
    reduction = np.zeros(comparisons.height)
    n_fix = np.full(comparisons.height, np.nan)
    inflation = np.full(comparisons.height, np.nan)
    reason = np.full(comparisons.height, "", dtype=object)
    kind_of = comparisons.get_column("metric_kind").to_numpy()

    def col(name):
        return comparisons.get_column(name).cast(pl.Float64).to_numpy().copy()

    for kind in KINDS.values():
        i = kind_of == kind.name
        if kind.power_formula is None or not i.any():
            continue
        power = per_test_power(col("power")[i], col("n_guardrails")[i])
        r = inflation_at(col("comparison_alpha")[i], power)
        var_c, var_t, _ = arm_variances(col("baseline_mean")[i], col("mde_signed")[i], col("unit_sd")[i],
                                        kind.power_formula)
        reduction[i] = np.nan_to_num(difference_share(col("cuped_bound")[i], var_c, var_t, col("ratio")[i],
                                                      _covariance_kept(col("baseline_mean")[i], col("mde_signed")[i],
                                                                       kind.power_formula)))
        plan = planned_sample(  # n_fixed / v times R, and times 1 - rho^2 where the plan counts on CUPED
            baseline_mean=col("baseline_mean")[i], mde=col("mde_signed")[i], alpha=col("comparison_alpha")[i],
            power=power, min_samples=col("min_samples_per_arm")[i], allocation_ratio=col("ratio")[i],
            baseline_sd=col("unit_sd")[i], metric=kind.power_formula, inflation=r * (1 - reduction[i]),
            verified_share=col("expected_verified_share")[i],
        )
        n_plan[i], n_fix[i], inflation[i], reason[i] = plan.n_plan, plan.n_fixed, r, plan.reason
    return comparisons.with_columns(
        pl.Series("n_plan_c", n_plan), pl.Series("n_fixed_c", n_fix), pl.Series("r_c", inflation).fill_nan(None),
        pl.Series("why", reason.tolist(), dtype=pl.String), pl.Series("cuped_planned_r2", reduction),
    )


def _covariance_kept(baseline: np.ndarray, mde: np.ndarray, formula: str) -> np.ndarray:
    """The share of the control's covariance with the CUPED covariate the treatment arm keeps, as the
    plan assumes it (``stats.cuped.difference_share``): for a rate, a treatment that moves each unit
    by a share of what it can move (``1 - |d| / (1 - p)`` for an increase, ``1 - |d| / p`` for a
    decrease); for a mean, one that moves every unit alike (1)."""
    if formula != "binary":
        return np.ones_like(baseline)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1 - np.abs(mde) / np.where(mde > 0, 1 - baseline, baseline)


def _planned_units(arms: pl.DataFrame, per_experiment: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, planned_units``: the JSON object of units planned per arm."""
    return (
        arm_ratios(arms).join(per_experiment.select("experiment_id", "planned_n_per_arm"), on="experiment_id")
        .with_columns((pl.col("planned_n_per_arm") * pl.col("ratio")).ceil().alias("units"))
        .group_by("experiment_id", maintain_order=True)  # pragma: no mutate
        .agg(pl.struct("arm", "units").alias("u"))
        .with_columns(
            pl.col("u").list.eval(pl.format('"{}": {}', pl.element().struct.field("arm"),
                                            pl.element().struct.field("units"))).list.join(", ").alias("planned_units")
        )
        .select("experiment_id", pl.concat_str(pl.lit("{"), "planned_units", pl.lit("}")).alias("planned_units"))
    )


def plan_registrations(
    registrations: pl.DataFrame,
    existing: pl.DataFrame | None = None,
    events: pl.DataFrame | None = None,
    traffic: pl.DataFrame | None = None,
    policy: RegistrationPolicy | None = None,
    aggregate_exports: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Frozen plans of the registrations that have none yet (vectorised over registrations).

    Args:
        registrations: ``sql/select_registrations.sql`` rows without a plan.
        existing: the plans already frozen (for the slots), or None.
        events: staged experiment events (``experiment_id, status, at``), or None.
        traffic: ``experiment_id, traffic_per_day`` (units a day of the family before
            registration), or None.
        policy: K and the policy version.
        aggregate_exports: ``experiment_id`` of experiments read from an aggregate export
            (staged arm snapshots), or None for none. Their binary primary metric is planned
            as a proportion of units whatever ``sessions_per_unit`` says, as the look
            compares it (:func:`~zcl_assets.analysis.metrics.several_sessions_a_unit`).

    Returns:
        One row per registration with the :data:`EXPERIMENT_PLANS` columns except
        ``planned_at``. Unreachable plans carry ``inf`` and a reason, never an exception.
    """
    policy = policy or RegistrationPolicy()
    schema = EXPERIMENT_PLANS.polars
    if registrations.height == 0:
        return pl.DataFrame(schema=schema)
    existing = existing if existing is not None else pl.DataFrame(
        schema={"experiment_id": pl.String, "org_id": pl.String, "task_type": pl.String, "admitted": pl.Boolean,
                "alpha_slot": pl.Int64})
    events = events if events is not None else pl.DataFrame(
        schema={"experiment_id": pl.String, "status": pl.String, "at": pl.Datetime("us", "UTC")})
    if "cuped" not in registrations.columns:  # a registration read before the field existed: its default
        registrations = registrations.with_columns(pl.lit(True).alias("cuped"))
    slots = assign_slots(registrations, existing, events, policy)
    traffic = _history(traffic)
    comparisons = _planned_samples(_plan_comparisons(registrations, slots, policy, aggregate_exports, traffic))
    comparisons = comparisons.with_columns(cuped_basis(policy.cuped_confidence).alias("cuped_basis"))
    per_experiment = comparisons.group_by("experiment_id", maintain_order=True).agg(  # pragma: no mutate
        pl.col("n_plan_c").max().alias("planned_n_per_arm"),
        pl.col("n_fixed_c").max().alias("n_fixed_per_arm"),
        pl.col("r_c").max().alias("inflation"),
        pl.col("why").filter(pl.col("why") != "").first().alias("why"),
        pl.col("ratio").max().alias("max_ratio"),
        pl.col("ratio").sum().alias("sum_ratio"),
        pl.first("org_id", "task_type", "admitted", "alpha_slot", "alpha_share", "n_comparisons", "comparison_alpha",
                 "metric_kind", "randomization_unit", "sessions_per_unit", "expected_verified_share", "n_guardrails",
                 "concurrent", "unit_sd", "design_effect", "variance_basis", "cuped", "cuped_r2",
                 "cuped_basis"),
        pl.col("cuped_planned_r2").min(),
    )
    traffic = traffic.select("experiment_id", "traffic_per_day")
    reachable = pl.col("planned_n_per_arm").is_finite()
    fallback = (f"; the CS is tuned at {FALLBACK_TUNING_UNITS:,.0f} units in each comparison instead "
                "(GrowthBook's default tuning), and only adopt or reject can end it")
    total_units = pl.col("planned_n_per_arm") * (1 + pl.col("sum_ratio"))
    out = (
        per_experiment.join(_planned_units(decode_arms(registrations), per_experiment), on="experiment_id", how="left")
        .join(traffic, on="experiment_id", how="left")
        .join(allocation_known(registrations), on="experiment_id")
        .with_columns(
            pl.col("alpha_slot").cast(pl.Int64),
            pl.lit(policy.alpha_slots, dtype=pl.Int64).alias("alpha_slots"),
            kind_estimand(pl.col("metric_kind")).alias("estimand"),
            pl.when(pl.col("randomization_unit") == "user").then(pl.lit("users")).otherwise(pl.lit("sessions"))
            .alias("planned_unit"),
            pl.when(reachable).then(pl.col("planned_n_per_arm"))
            .otherwise(pl.lit(float(FALLBACK_TUNING_UNITS)) / (1 + pl.col("max_ratio"))).alias("tuning_n_per_arm"),
            pl.col("expected_verified_share").alias("verified_share"),
            pl.col("n_guardrails").cast(pl.Int64),
            reachable.alias("reachable"),
            pl.when(~pl.col("admitted")).then(pl.lit("registration refused: no alpha slot free"))
            .when(~reachable).then(pl.col("why") + pl.lit(fallback))
            .when(~pl.col("allocation_known")).then(pl.lit("allocation not declared: planned at equal allocation"))
            .otherwise(pl.lit(None)).alias("plan_reason"),
            pl.when(pl.col("traffic_per_day") > 0)
            .then((total_units / (pl.col("traffic_per_day") / pl.col("concurrent").clip(1))).ceil())
            .alias("days_to_plan"),
            pl.lit(policy.version).alias("policy_version"),
            pl.when("cuped").then(pl.lit(COVARIATE_WINDOW_DAYS)).alias("covariate_window_days"),
        )
    )
    return out.select(list(schema)).cast(schema).sort("experiment_id")


def mde_signed() -> pl.Expr:
    """The registered MDE in the direction of the primary metric: negative where a decrease is
    beneficial (Float64 expression over a registration frame)."""
    return pl.when(pl.col("direction") == "decrease").then(-pl.col("mde")).otherwise(pl.col("mde"))


MIN_HISTORY_USERS = 30
"""Users with a verified session in the 28 days before registration that a user-randomized plan
needs before it takes the variance of a per-user mean from them instead of its bound."""

_HISTORY = {"experiment_id": pl.String, "traffic_per_day": pl.Float64, "verified_share": pl.Float64,
            "success_rate": pl.Float64, "history_users": pl.Int64, "sessions_per_user": pl.Float64,
            "user_rate_variance": pl.Float64, "cuped_n": pl.Int64,
            **{c: pl.Float64 for c in ("cuped_sv", "cuped_svv", "cuped_sx", "cuped_sxx", "cuped_sh", "cuped_sxv",
                                       "cuped_shv")}}
"""The columns of ``sql/measure_family_traffic.sql``."""


def _history(traffic: pl.DataFrame | None) -> pl.DataFrame:
    """``traffic`` with every column of :data:`_HISTORY` (absent ones null)."""
    traffic = traffic if traffic is not None else pl.DataFrame(schema={"experiment_id": pl.String})
    return traffic.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in _HISTORY.items()
                                if c not in traffic.columns).select(list(_HISTORY)).cast(_HISTORY)


def cuped_applies() -> pl.Expr:
    """CUPED applies: the registration asks for it (null: its default, yes) and at least
    :data:`MIN_HISTORY_USERS` units of the family's last 28 days had a covariate (Boolean)."""
    return pl.col("cuped").fill_null(True) & (pl.col("cuped_sh").fill_null(0) >= MIN_HISTORY_USERS)


def cuped_basis(confidence: float | None) -> pl.Expr:
    """What the plan counts on from CUPED and why, in words (String expression over the frame of
    ``_plan_comparisons``: ``cuped_asked`` by the registration, ``cuped`` applies, the history's
    ``cuped_r2`` and the ``cuped_planned_r2`` bound at ``confidence``)."""
    units, n = pl.col("cuped_sh").fill_null(0).cast(pl.Int64), pl.col("cuped_n").fill_null(0)
    none = "no adjustment, and the plan counts on no variance reduction"
    bound = (f"its lower {confidence:.0%} confidence bound (Olkin and Finn 1995)" if confidence is not None
             else "the history's own figure")
    return (
        pl.when(~pl.col("cuped_asked")).then(pl.lit(f"CUPED not asked for by the registration: {none}"))
        .when(~pl.col("cuped")).then(pl.format(
            "CUPED asked for, but {} units of the family's last 28 days had a pre-period mean and {} are needed: " + none,
            units, pl.lit(MIN_HISTORY_USERS)))
        .when(pl.col("cuped_r2").is_null()).then(pl.format(
            "CUPED applies ({} units of the family's last 28 days had a pre-period mean); the plan counts on no variance "
            "reduction: the history's rho^2 is measured on success only", units))
        .otherwise(pl.format(
            "CUPED applies (Deng et al. 2013): in the family's last 28 days each unit's pre-period mean explained "
            "rho^2 = {} of the variance ({} units, {} of them with a pre-period mean); the plan counts on {}, " + bound
            + ", so it plans 1 - {} of the units it would without", pl.col("cuped_r2").round(4), n, units,
            pl.col("cuped_planned_r2").round(4), pl.col("cuped_planned_r2").round(4)))
    )


def history_r2(history: pl.DataFrame) -> np.ndarray:
    """The share of the unit value's variance its covariate explained in the family's history
    (``measure_family_traffic.sql``'s ``cuped_*`` sums, centered here), per row; NaN without."""
    def col(name):
        return history.get_column(name).cast(pl.Float64).to_numpy()

    n, sv, sx, sh = col("cuped_n"), col("cuped_sv"), col("cuped_sx"), col("cuped_sh")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = {k: s / n for k, s in (("v", sv), ("x", sx), ("h", sh))}
        moments = Moments(
            n=n, mean_v=mean["v"], mean_x=mean["x"], mean_h=mean["h"],
            s_vv=col("cuped_svv") - sv * mean["v"], s_xx=col("cuped_sxx") - sx * mean["x"], s_hh=sh - sh * mean["h"],
            s_xh=sx - sh * mean["x"], s_xv=col("cuped_sxv") - sx * mean["v"], s_hv=col("cuped_shv") - sh * mean["v"])
    return explained_share(moments)


def history_known() -> pl.Expr:
    """A user-randomized plan of a binary primary metric without a registered sd, whose family
    has the history to say how a per-user mean varies (Boolean expression)."""
    r = pl.col("success_rate")
    return (counts_successes(pl.col("primary_metric")) & pl.col("baseline_sd").is_null()
            & (pl.col("randomization_unit") == "user") & (pl.col("history_users") >= MIN_HISTORY_USERS)
            & (r > 0) & (r < 1) & pl.col("user_rate_variance").is_not_null() & (pl.col("sessions_per_user") >= 1))


def history_factor() -> pl.Expr:
    """Variance of a user's mean success relative to one session's ``p (1 - p)``, from the
    family's history: ``user_rate_variance / (r (1 - r))`` at the history's success rate r, held
    within ``[1 / m, 1]`` for m verified sessions a user (1: ``p (1 - p)`` bounds the variance of
    a mean of values in [0, 1]; ``1 / m``: sessions no more alike within a user than between
    users, a design effect of at least 1). Where :func:`history_known`; else 1."""
    r = pl.col("success_rate")
    raw = pl.col("user_rate_variance") / (r * (1 - r))
    return pl.when(history_known()).then(raw.clip(1 / pl.col("sessions_per_user"), 1.0)).otherwise(pl.lit(1.0))


def unit_sd() -> pl.Expr:
    """The per-unit sd a plan assumes: the registered ``baseline_sd``, else ``sqrt(p (1 - p) f)``
    of a binary primary metric at its baseline rate p, with f the family's :func:`history_factor`
    for a user-randomized plan (a binary metric averaged over a user's sessions; f = 1 without
    history, the bound); null for a continuous metric without one (Float64 expression)."""
    binary = counts_successes(pl.col("primary_metric"))
    return pl.coalesce(
        pl.col("baseline_sd"),
        pl.when(binary).then((pl.col("baseline_mean") * (1 - pl.col("baseline_mean")) * history_factor()).sqrt()),
    )


def variance_basis() -> pl.Expr:
    """Where the plan's variance comes from, in words (String expression)."""
    unit = pl.col("randomization_unit") == "user"
    binary = counts_successes(pl.col("primary_metric"))
    return (
        pl.when(pl.col("baseline_sd").is_not_null()).then(pl.lit("the registered sd"))
        .when(history_known()).then(pl.format(
            "the family's history: {} users with {} verified sessions each on average; the variance of a user's mean "
            "success is {} x p(1 - p) (design effect {})", pl.col("history_users"), pl.col("sessions_per_user").round(2),
            history_factor().round(4), (history_factor() * pl.col("sessions_per_user")).round(2)))
        .when(binary & unit).then(pl.format(
            "p(1 - p), the largest variance a per-user mean can have: the family's history has {} users with a "
            "verified session, and {} are needed to use it", pl.col("history_users"), pl.lit(MIN_HISTORY_USERS)))
        .when(binary).then(pl.lit("p(1 - p) of a proportion"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def allocation_known(registrations: pl.DataFrame) -> pl.DataFrame:
    """``experiment_id, allocation_known``: every arm of the registration has a share."""
    arms = decode_arms(registrations)
    return arms.group_by("experiment_id").agg(pl.col("share").is_not_null().all().alias("allocation_known"))


def refusal_quarantine(plans: pl.DataFrame, lineage: pl.DataFrame, policy: RegistrationPolicy) -> pl.DataFrame:
    """Quarantine rows (stage ``registration``) of refused registrations.

    Args:
        plans: new plans (``experiment_id, org_id, task_type, admitted``).
        lineage: ``experiment_id, partition_day, source_file, source_row`` of staged registrations.
        policy: the registration policy (K in the reason).
    """
    refused = plans.filter(~pl.col("admitted")).join(lineage, on="experiment_id", how="left")
    return refused.select(
        pl.lit("experiments").alias("source_table"),
        "partition_day", "source_file", "source_row",
        pl.lit("registration").alias("stage"),
        pl.lit("alpha_slots_exhausted").alias("rule"),
        pl.format(
            "organization {} and task type {} already have {} live experiments (K = {} alpha slots); "
            "the registration is refused and every look of it is invalid",
            "org_id", "task_type", pl.lit(policy.alpha_slots), pl.lit(policy.alpha_slots),
        ).alias("reason"),
        pl.struct("experiment_id").struct.json_encode().alias("record"),  # JSON whatever the id holds
    )


def allocation_changes(events: pl.DataFrame, arms: pl.DataFrame, registrations: pl.DataFrame):
    """Declared allocation changes, checked: ``(valid, invalid)``.

    A change is an ``experiment_events`` row with an ``allocation`` JSON object (arm ->
    share) and its time. It is valid when it names exactly the registration's arms, every
    share is positive and finite, the shares sum to 1 (within 1e-6), the registration
    declared an allocation, and it comes after the registration.

    Returns:
        ``valid``: one row per (experiment, change time, arm) with ``share``;
        ``invalid``: ``experiment_id, at, allocation, why`` (quarantined by the plans asset).
    """
    cols = {"experiment_id": pl.String, "at": pl.Datetime("us", "UTC"), "arm": pl.String, "share": pl.Float64}
    if "allocation" not in events.columns:
        return pl.DataFrame(schema=cols), pl.DataFrame(
            schema={"experiment_id": pl.String, "at": pl.Datetime("us", "UTC"), "allocation": pl.String, "why": pl.String})
    changes = events.filter(pl.col("allocation").is_not_null()).select("experiment_id", "at", "allocation")
    rows = []
    bad = []
    declared = arms.group_by("experiment_id").agg(pl.col("arm"), pl.col("share").is_not_null().all().alias("known"))  # pragma: no mutate
    declared = {e: (set(a), k) for e, a, k in declared.iter_rows()}
    registered = dict(registrations.select("experiment_id", "registered_at").iter_rows())
    # Change events are rare (one per declared change); each is checked on its own.
    for eid, at, text in changes.sort("experiment_id", "at").iter_rows():
        try:
            shares = json.loads(text)
            if not isinstance(shares, dict):
                raise ValueError("not an object")
            values = {str(k): float(v) for k, v in shares.items()}
        except (TypeError, ValueError, json.JSONDecodeError):
            bad.append((eid, at, text, "allocation must be a JSON object of arm -> share"))
            continue
        arm_names, known = declared.get(eid, (set(), False))
        why = None
        if not known:
            why = "the registration declares no allocation, so a change cannot be stratified"
        elif set(values) != arm_names:
            why = f"allocation names {sorted(values)} but the registered arms are {sorted(arm_names)}"
        elif not all(np.isfinite(v) and v > 0 for v in values.values()) or abs(sum(values.values()) - 1) > 1e-6:
            why = f"shares must be positive and sum to 1, got {values}"
        elif eid in registered and at <= registered[eid]:
            why = "a change must come after the registration"
        if why:
            bad.append((eid, at, text, why))
            continue
        rows.extend((eid, at, arm, share) for arm, share in values.items())
    valid = pl.DataFrame(rows, schema=cols, orient="row")
    invalid = pl.DataFrame(bad, schema={"experiment_id": pl.String, "at": pl.Datetime("us", "UTC"),
                                        "allocation": pl.String, "why": pl.String}, orient="row")
    return valid, invalid


