"""The deciding steps of the look: from each comparison's estimate to its decision.

* :func:`sequence`: the confidence sequence tuned at registration, its anytime-valid p,
  Holm over the experiment's primary comparisons (an undefined p counted as 1) and the CS
  read at each comparison's Holm step, so that a CS excludes zero exactly when Holm rejects;
* :func:`deciding_interval`: the interval the rule reads, the CS clipped to the range its
  metric kind's difference lies in (``MetricKind.clip``);
* :func:`guardrails`: each guardrail's verdict (``stats.decision.guardrail_verdict``) and,
  per primary comparison, the first guardrail that holds ``adopt``;
* :func:`progress`: units assigned, verified share, information fraction, days to the plan,
  power reached, and whether the planned sample is reached (rule 5);
* :func:`decision`: the :class:`~zcl_assets.stats.decision.Evidence` of rules 1 to 6 and
  ``stats.decision.decide``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.analysis.estimate import Estimate, Nights
from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.metrics import KINDS
from zcl_assets.analysis.quality import Validity
from zcl_assets.stats.decision import NON_INFERIOR, Decision, Evidence, burn_in, decide, guardrail_verdict
from zcl_assets.stats.multiplicity import holm_steps
from zcl_assets.stats.power import power_at
from zcl_assets.stats.sequential import anytime_pvalue, cs_halfwidth, optimal_rho

REFUSED = "registration refused: no alpha slot was free in its organization and task type"
"""Rule 1's reason for a refused registration (its every look is invalid)."""
STICKY = "invalid since an earlier look (no reopen event)"
"""Rule 1's reason once a signal of ``quality.rule_one`` fired in the epoch."""


class Sequence(NamedTuple):
    """The confidence sequence of each comparison and night, read at its Holm step.

    Attributes:
        low, high: the CS (treatment minus control, metric units); NaN when undefined.
        level: the level it is read at (the comparison's alpha, or its Holm step).
        pvalue: the anytime-valid p-value (raw).
        adjusted: Holm-adjusted p over the experiment's primary comparisons (NaN elsewhere).
        family_size: comparisons in that family (0 for rows outside one).
    """

    low: np.ndarray
    high: np.ndarray
    level: np.ndarray
    pvalue: np.ndarray
    adjusted: np.ndarray
    family_size: np.ndarray


def sequence(at: Nights, estimate: Estimate, grid: Grid) -> Sequence:
    """The CS at each night, tuned at registration (``comparison_alpha`` and the planned
    total), with Holm over the primary comparisons of each experiment and night."""
    comp_alpha = at.column("comparison_alpha")
    rho = optimal_rho(comp_alpha, at.column("tuning_n_total"))
    sigma2 = estimate.n_total * estimate.se2
    p_raw = anytime_pvalue(estimate.diff, sigma2, estimate.n_total, rho)
    is_primary = at.design.get_column("is_primary").to_numpy()
    level = comp_alpha.copy()
    adjusted = np.full(at.e.shape, np.nan)
    family = np.zeros(at.e.shape, dtype=np.int64)
    if is_primary.any():
        sel = np.flatnonzero(is_primary)
        holm = holm_steps(p_raw[sel], at.e[sel] * grid.nights + at.d[sel], at.column("alpha_share")[sel])
        level[sel] = holm.level
        adjusted[sel] = np.where(np.isnan(p_raw[sel]), np.nan, holm.adjusted)
        family[sel] = holm.family_size
    hw = cs_halfwidth(sigma2, estimate.n_total, rho, level)
    return Sequence(estimate.diff - hw, estimate.diff + hw, level, p_raw, adjusted, family)


class Interval(NamedTuple):
    """The interval the decision rule reads, per comparison and night."""

    low: np.ndarray
    high: np.ndarray


def deciding_interval(at: Nights, cs: Sequence) -> Interval:
    """Tonight's CS within the range its kind's difference lies in (a difference of
    proportions lies in [-1, 1]; the halfwidth is not negative, so only the outer ends move)."""
    low, high = cs.low.copy(), cs.high.copy()
    for kind in KINDS.values():
        if kind.clip is None:
            continue
        i = at.kinds == kind.name
        low[i] = np.maximum(low[i], kind.clip[0])
        high[i] = np.minimum(high[i], kind.clip[1])
    return Interval(low, high)


class Guardrails(NamedTuple):
    """What the guardrails say of each comparison and night.

    Attributes:
        held: "held by guardrail g" for the first guardrail (in registration order) of the
            same experiment, night and treatment arm not shown non-inferior, else "".
        status: every guardrail of it in words, "; "-separated (null where it has none).
    """

    held: np.ndarray
    status: pl.Series


def guardrails(at: Nights, interval: Interval, grid: Grid) -> Guardrails:
    """Each guardrail's verdict, gathered onto the comparisons of its experiment, night and arm."""
    margin = at.column("margin")
    verdict = guardrail_verdict(interval.low, interval.high, at.column("sign"), margin)
    key = (at.e * grid.nights + at.d) * grid.max_arms + at.treatment
    frame = pl.DataFrame({"k": key, "order": at.column("guardrail_order"), "metric": at.design.get_column("metric"),
                          "ok": verdict.verdict == NON_INFERIOR, "b_lo": verdict.beneficial_low, "margin": margin})
    frame = frame.filter(pl.Series(at.design.get_column("role").to_numpy() == "guardrail")).sort("k", "order")
    frame = frame.with_columns(
        pl.when(pl.col("ok")).then(pl.format(
            "{}: non-inferior (CS lower end {} in the beneficial direction is above -{})",
            "metric", pl.col("b_lo").round_sig_figs(4), pl.col("margin").round_sig_figs(4)))
        .otherwise(pl.format(
            "{}: not shown non-inferior (CS lower end {} in the beneficial direction, margin -{})",
            "metric", pl.col("b_lo").round_sig_figs(4).cast(pl.String).fill_null("undefined"),
            pl.col("margin").round_sig_figs(4))).alias("line"))
    per_arm = frame.group_by("k").agg(
        pl.col("metric").filter(~pl.col("ok")).first().alias("failing"), pl.col("line").str.join("; ").alias("status"))
    gathered = pl.DataFrame({"k": key}).join(per_arm, on="k", how="left", maintain_order="left")
    held = gathered.select(pl.when(pl.col("failing").is_not_null()).then(pl.format("held by guardrail {}", "failing"))
                           .otherwise(pl.lit(""))).to_series().to_numpy()
    return Guardrails(held, gathered.get_column("status"))


class Progress(NamedTuple):
    """How far each comparison is at each night.

    Attributes:
        assigned_t, assigned_c: units first assigned to each arm (every stratum).
        days: days since the first assignment (NaN: none yet).
        users_in_both: users seen in a second arm (session-randomized experiments; NaN otherwise).
        verified_share: analysed units over assigned units.
        information: the smaller arm's share of its planned sample.
        days_to_plan: days left at the current traffic (NaN when unreachable or unknown).
        power: power reached for the MDE at the control arm's units (primary rows).
        plan_reached: both arms at or past their planned sample, counted at the expected
            verified share (rule 5).
    """

    assigned_t: np.ndarray
    assigned_c: np.ndarray
    days: np.ndarray
    users_in_both: np.ndarray
    verified_share: np.ndarray
    information: np.ndarray
    days_to_plan: np.ndarray
    power: np.ndarray
    plan_reached: np.ndarray


def _power(at: Nights, n_c: np.ndarray) -> np.ndarray:
    """Power reached at ``n_c`` control units by each primary comparison's kind (never the observed effect)."""
    power = np.full(at.e.shape, np.nan)
    is_primary = at.design.get_column("is_primary").to_numpy()
    for kind in KINDS.values():
        sel = (at.kinds == kind.name) & is_primary
        if kind.power_formula is None or not sel.any():
            continue
        power[sel] = power_at(n_c[sel], at.column("mde_signed")[sel], at.column("baseline_mean")[sel],
                              at.column("comparison_alpha")[sel], at.column("ratio")[sel],
                              baseline_sd=at.column("unit_sd")[sel], metric=kind.power_formula,
                              inflation=at.column("inflation")[sel])
    return power


def progress(at: Nights, estimate: Estimate, validity: Validity, looks: pl.DataFrame, both_arms: pl.DataFrame,
             grid: Grid) -> Progress:
    """Units, shares, days and power of each comparison and night (``looks`` and ``both_arms``
    as in ``engine.LookInputs``)."""
    e, d, jt, jc = at.e, at.d, at.treatment, at.control
    assigned_t = validity.assigned[e, d, np.maximum(jt, 0)] * (jt >= 0)
    assigned_c = validity.assigned[e, d, np.maximum(jc, 0)] * (jc >= 0)
    days_grid = np.full(grid.shape, np.nan)
    days_grid[grid.e(looks.get_column("experiment_id")), grid.d(looks.get_column("as_of"))] = \
        looks.get_column("days_since_first_assignment").cast(pl.Float64).to_numpy()
    days = days_grid[e, d]
    both_users = np.cumsum(grid.tensor((grid.e(both_arms.get_column("experiment_id")),), grid.d(both_arms.get_column("day")),
                                       both_arms.get_column("users").cast(pl.Float64).to_numpy(), (), carry=False), axis=1)
    sessions_source = at.design.get_column("analysis_unit").to_numpy() == "session"
    plan_c, plan_t = at.column("planned_n_per_arm"), at.column("planned_n_treatment")
    n_t, n_c = estimate.treatment.n, estimate.control.n
    with np.errstate(invalid="ignore", divide="ignore"):
        verified_share = (n_t + n_c) / (assigned_t + assigned_c)
        info = np.minimum(assigned_t / plan_t, assigned_c / plan_c)
        left = np.maximum(np.maximum(plan_t - assigned_t, 0) / (assigned_t / days),
                          np.maximum(plan_c - assigned_c, 0) / (assigned_c / days))
    reachable = at.design.get_column("plan_reachable").to_numpy()
    days_to_plan = np.where(reachable & (days > 0) & np.isfinite(left), np.ceil(left), np.nan)
    plan = plan_c * at.column("expected_verified_share")
    reached = (n_c >= plan) & (n_t >= plan * at.column("ratio"))
    return Progress(assigned_t, assigned_c, days, np.where(sessions_source, both_users[e, d], np.nan), verified_share,
                    info, days_to_plan, _power(at, n_c), reached)


def decision(at: Nights, estimate: Estimate, interval: Interval, held: Guardrails, done: Progress,
             validity: Validity) -> Decision:
    """Rules 1 to 6 of DESIGN section 6 on the evidence of the chain (``stats.decision.decide``)."""
    refused = at.design.get_column("registration_refused").to_numpy()
    invalid = np.where(refused, REFUSED, np.where(validity.invalid[at.e, at.d], STICKY, "")).astype(object)
    t, c = estimate.treatment, estimate.control
    # burn-in counts successes and failures where the metric counts successes (metrics.counts_successes)
    fewest = np.where(at.design.get_column("counts_successes").to_numpy(),
                      np.minimum.reduce([t.successes, t.observations - t.successes, c.successes,
                                         c.observations - c.successes]), np.inf)
    evidence = Evidence(
        cs_low=interval.low, cs_high=interval.high, mde=at.column("mde"), direction=at.column("sign"), invalid=invalid,
        burn_in=burn_in(t.n, c.n, at.column("min_samples_per_arm"), done.days, fewest), held=held.held,
        plan_reached=done.plan_reached, plan_reachable=at.design.get_column("plan_reachable").to_numpy(),
    )
    return decide(evidence)
