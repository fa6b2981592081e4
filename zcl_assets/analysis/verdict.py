"""The deciding steps of the look: from each comparison's estimate to its decision.

* :func:`burn_in_reasons`: rule 2 at every night (within the night's epoch);
* :func:`sequence`: tonight's confidence sequence tuned at registration, its anytime-valid p,
  the running minimum of that p over the post-burn-in looks of the epoch, Holm over the
  experiment's primary comparisons on the running p (an undefined p counted as 1), and the
  level of each comparison's Holm step;
* :func:`deciding_interval`: the interval the rule reads, the running intersection of the
  comparison's confidence sequences over the post-burn-in looks of its epoch, read at
  tonight's Holm step, within the range its kind's difference lies in (``MetricKind.clip``);
  an empty intersection is the night the effect was shown not constant over time;
* :func:`guardrails`: each guardrail's verdict (``stats.decision.guardrail_verdict``) on its
  own running intersection, and, per primary comparison, the guardrail that holds ``adopt``
  (a breached one first);
* :func:`progress`: units assigned, verified share, information fraction, days to the plan,
  power reached, whether the planned sample is reached (rule 5) and whether the experiment
  is stalled;
* :func:`decision`: the :class:`~zcl_assets.stats.decision.Evidence` of rules 1 to 6 and
  ``stats.decision.decide``.

Why the running intersection: a confidence sequence covers the true difference at every look
at once with probability ``1 - alpha``, so the intersection of tonight's interval with every
earlier one covers it too (Howard et al. 2021, Sec. 2; Waudby-Smith et al. 2024). It only
shrinks, so a decision never weakens from one look to the next, except to ``invalid``: an
empty intersection means that no single constant effect is consistent with every look. The CS
at level ``a`` excludes zero exactly when the anytime p is below ``a``, so the intersection
excludes zero exactly when the running minimum of p does, and Holm over the running minima is
Holm over the intersections (the decision, the interval shown and the adjusted p agree).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.analysis.estimate import Estimate, Nights
from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.metrics import KINDS
from zcl_assets.analysis.quality import Validity
from zcl_assets.analysis.wording import figures
from zcl_assets.stats.decision import (
    BREACHED,
    NON_INFERIOR,
    STALLED_AFTER_DAYS,
    Decision,
    Evidence,
    burn_in,
    decide,
    guardrail_verdict,
)
from zcl_assets.stats.epochs import within_epoch
from zcl_assets.stats.multiplicity import holm_steps
from zcl_assets.stats.power import power_at
from zcl_assets.stats.sequential import anytime_pvalue, cs_halfwidth, optimal_rho

REFUSED = "registration refused: no alpha slot was free in its organization and task type"
"""Rule 1's reason for a refused registration (its every look is invalid)."""
STICKY = "invalid since an earlier look (no reopen event)"
"""Rule 1's reason once a signal of ``quality.rule_one`` fired in the epoch."""
NOT_CONSTANT = "the effect is not constant over time"
"""Rule 1's reason once the running intersection of a comparison (or of one of its guardrails) is empty."""


def along(at: Nights, grid: Grid, values: np.ndarray, ufunc: np.ufunc, identity: float) -> np.ndarray:
    """Running ``ufunc`` of one value per row of ``at`` along each comparison's nights, restarted
    at each epoch (``stats.epochs.within_epoch`` on a ``[comparison, night]`` grid)."""
    if at.cid.size == 0:
        return np.zeros(0)
    n_comparisons = int(at.cid.max()) + 1
    experiment = np.zeros(n_comparisons, dtype=np.int64)
    experiment[at.cid] = at.e
    dense = np.full((n_comparisons, grid.nights), identity, dtype=float)
    dense[at.cid, at.d] = values
    return within_epoch(ufunc, dense, grid.epoch[experiment], identity)[at.cid, at.d]


def burn_in_reasons(at: Nights, estimate: Estimate, days: np.ndarray) -> np.ndarray:
    """Rule 2 of every row (``stats.decision.burn_in``), on the units of the night's epoch and
    the days since its first assignment; burn-in counts successes and failures where the
    metric counts successes (``metrics.counts_successes``)."""
    t, c = estimate.treatment, estimate.control
    fewest = np.where(at.design.get_column("counts_successes").to_numpy(),
                      np.minimum.reduce([t.successes, t.observations - t.successes, c.successes,
                                         c.observations - c.successes]), np.inf)
    return burn_in(t.n, c.n, at.column("min_samples_per_arm"), days, fewest)


class Sequence(NamedTuple):
    """The confidence sequence of each comparison and night, and the p-values Holm reads.

    Attributes:
        night_low, night_high: tonight's CS (treatment minus control, metric units) read at
            ``level``; NaN when undefined.
        level: the level it is read at (the comparison's alpha, or its Holm step).
        pvalue: tonight's anytime-valid p-value (raw).
        running: the smallest ``pvalue`` over the post-burn-in looks of the epoch so far
            (NaN before the first).
        adjusted: Holm-adjusted ``running`` over the experiment's primary comparisons (NaN elsewhere).
        family_size: comparisons in that family (0 for rows outside one).
        past_burn_in: this look enters the running intersection (past burn-in, CS defined).
        sigma2, rho: the per-observation variance and the tuning of tonight's CS.
    """

    night_low: np.ndarray
    night_high: np.ndarray
    level: np.ndarray
    pvalue: np.ndarray
    running: np.ndarray
    adjusted: np.ndarray
    family_size: np.ndarray
    past_burn_in: np.ndarray
    sigma2: np.ndarray
    rho: np.ndarray


def sequence(at: Nights, estimate: Estimate, burn: np.ndarray, grid: Grid) -> Sequence:
    """The CS at each night, tuned at registration (``comparison_alpha`` and the planned total),
    with Holm over the running-minimum p of the primary comparisons of each experiment and night."""
    comp_alpha = at.column("comparison_alpha")
    rho = optimal_rho(comp_alpha, at.column("tuning_n_total"))
    sigma2 = estimate.n_total * estimate.se2
    p_raw = anytime_pvalue(estimate.diff, sigma2, estimate.n_total, rho)
    post = (burn == "") & np.isfinite(p_raw)
    running = along(at, grid, np.where(post, p_raw, np.inf), np.fmin, np.inf)
    running = np.where(np.isfinite(running), running, np.nan)
    is_primary = at.design.get_column("is_primary").to_numpy()
    level = comp_alpha.copy()
    adjusted = np.full(at.e.shape, np.nan)
    family = np.zeros(at.e.shape, dtype=np.int64)
    if is_primary.any():
        sel = np.flatnonzero(is_primary)
        holm = holm_steps(running[sel], at.e[sel] * grid.nights + at.d[sel], at.column("alpha_share")[sel])
        level[sel] = holm.level
        adjusted[sel] = np.where(np.isnan(running[sel]), np.nan, holm.adjusted)
        family[sel] = holm.family_size
    hw = cs_halfwidth(sigma2, estimate.n_total, rho, level)
    return Sequence(estimate.diff - hw, estimate.diff + hw, level, p_raw, running, adjusted, family, post, sigma2, rho)


class Interval(NamedTuple):
    """The interval the decision rule reads, per comparison and night.

    Attributes:
        low, high: the running intersection within its kind's range (NaN before the first
            post-burn-in look and once empty).
        night_low, night_high: tonight's CS within the same range.
        looks: post-burn-in looks intersected (0 before the first).
        since: night position of the first of them (-1: none).
        empty_since: night position at which the intersection became empty in the epoch (-1: never).
    """

    low: np.ndarray
    high: np.ndarray
    night_low: np.ndarray
    night_high: np.ndarray
    looks: np.ndarray
    since: np.ndarray
    empty_since: np.ndarray


def _clip(at: Nights, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ends within the range its kind's difference lies in (a difference of proportions lies in
    [-1, 1]; a CS contains its estimate, so only the outer ends move)."""
    low, high = low.copy(), high.copy()
    for kind in KINDS.values():
        if kind.clip is None:
            continue
        i = at.kinds == kind.name
        low[i] = np.maximum(low[i], kind.clip[0])
        high[i] = np.minimum(high[i], kind.clip[1])
    return low, high


def deciding_interval(at: Nights, estimate: Estimate, cs: Sequence, grid: Grid) -> Interval:
    """The running intersection of each comparison's CS over the post-burn-in looks of its epoch,
    every look read at tonight's level (a primary comparison's Holm step ``alpha_share / j``:
    one pass per step, at most the largest family), and the night it became empty (sticky)."""
    is_primary = at.design.get_column("is_primary").to_numpy()
    share = at.column("alpha_share")
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(is_primary & np.isfinite(cs.level) & (cs.level > 0), np.rint(share / cs.level), 1.0)
    step = np.nan_to_num(step, nan=1.0).astype(np.int64)
    low, high = np.full(at.e.shape, -np.inf), np.full(at.e.shape, np.inf)
    for j in range(1, int(step.max(initial=1)) + 1):
        level = np.where(is_primary, share / j, cs.level)
        hw = cs_halfwidth(cs.sigma2, estimate.n_total, cs.rho, level)
        enters = cs.past_burn_in & np.isfinite(hw)
        run_low = along(at, grid, np.where(enters, estimate.diff - hw, -np.inf), np.fmax, -np.inf)
        run_high = along(at, grid, np.where(enters, estimate.diff + hw, np.inf), np.fmin, np.inf)
        here = step == j
        low[here], high[here] = run_low[here], run_high[here]
    empty = low > high
    nights = at.d.astype(float)
    empty_first = along(at, grid, np.where(empty, nights, np.inf), np.fmin, np.inf)
    looks = along(at, grid, cs.past_burn_in.astype(float), np.add, 0.0)
    since = along(at, grid, np.where(cs.past_burn_in, nights, np.inf), np.fmin, np.inf)
    gone = np.isfinite(empty_first) | (looks == 0)
    low, high = _clip(at, np.where(gone, np.nan, low), np.where(gone, np.nan, high))
    night_low, night_high = _clip(at, cs.night_low, cs.night_high)
    return Interval(low, high, night_low, night_high, looks.astype(np.int64),
                    np.where(np.isfinite(since), since, -1).astype(np.int64),
                    np.where(np.isfinite(empty_first), empty_first, -1).astype(np.int64))


class Guardrails(NamedTuple):
    """What the guardrails say of each comparison and night.

    Attributes:
        verdict: each guardrail row's own verdict (``non-inferior``, ``breached`` or ``not yet
            shown``; None on other rows).
        line: each guardrail row's verdict in words, in the metric's own direction.
        held: on primary rows, why a guardrail of the same experiment, night and treatment arm
            holds ``adopt`` (the first breached one in registration order, else the first not
            shown non-inferior), "" where none does.
        breached: on primary rows, a guardrail of its arm is breached.
        status: on primary rows, every guardrail's line, "; "-separated (null where it has none).
        empty_since: on primary rows, the first night a guardrail's intersection became empty (-1: never).
    """

    verdict: np.ndarray
    line: np.ndarray
    held: np.ndarray
    breached: np.ndarray
    status: pl.Series
    empty_since: np.ndarray


def _lines(metric: np.ndarray, verdict: np.ndarray, low: np.ndarray, high: np.ndarray, boundary: np.ndarray,
           constant: np.ndarray) -> list[str]:
    """"tokens breached: +2,475 to +5,214 against a margin of +2,000" per row (the CS as it is,
    treatment minus control, against the margin's end in the metric's own direction)."""
    lo, hi, bound = figures(low, 4, signed=True), figures(high, 4, signed=True), figures(boundary, 4, signed=True)
    words = {NON_INFERIOR: "non-inferior", BREACHED: "breached"}
    out = []
    for i, name in enumerate(metric.tolist()):
        if constant[i]:
            out.append(f"{name} non-inferior: both arms constant and equal")
            continue
        interval = f"{lo[i]} to {hi[i]}" if np.isfinite(low[i]) and np.isfinite(high[i]) else "no interval yet"
        out.append(f"{name} {words.get(verdict[i], 'not yet shown non-inferior')}: {interval} against a margin of "
                   f"{bound[i]}")
    return out


def guardrails(at: Nights, interval: Interval, estimate: Estimate, burn: np.ndarray, grid: Grid) -> Guardrails:
    """Each guardrail's verdict on its running intersection, gathered onto the comparisons of its
    experiment, night and arm (``burn``: rule 2 of every row)."""
    margin = at.column("margin")
    is_guard = at.design.get_column("role").to_numpy() == "guardrail"
    with np.errstate(invalid="ignore"):
        constant = ((estimate.var_t == 0) & (estimate.var_c == 0) & (estimate.diff == 0) & (burn == "")
                    & np.isnan(interval.low))
    judged = guardrail_verdict(interval.low, interval.high, at.column("sign"), margin, constant)
    metric = at.design.get_column("metric").to_numpy()
    line = np.full(at.e.shape, None, dtype=object)
    g = np.flatnonzero(is_guard)
    line[g] = _lines(metric[g], judged.verdict[g], interval.low[g], interval.high[g], judged.boundary[g], constant[g])
    key = (at.e * grid.nights + at.d) * grid.max_arms + at.treatment
    frame = pl.DataFrame({"k": key, "order": at.column("guardrail_order"), "metric": metric,
                          "verdict": judged.verdict.astype(str), "line": line.astype(object).tolist(),
                          "empty": interval.empty_since}, schema_overrides={"line": pl.String})
    frame = frame.filter(pl.Series(is_guard)).sort("k", "order")
    per_arm = frame.group_by("k").agg(
        pl.col("line").filter(pl.col("verdict") == BREACHED).first().alias("breach"),
        pl.col("metric").filter(pl.col("verdict") != NON_INFERIOR).first().alias("failing"),
        pl.col("line").filter(pl.col("verdict") != NON_INFERIOR).first().alias("failing_line"),
        pl.col("line").str.join("; ").alias("status"),
        pl.col("empty").filter(pl.col("empty") >= 0).min().alias("empty"))
    gathered = pl.DataFrame({"k": key}).join(per_arm, on="k", how="left", maintain_order="left")
    held = gathered.select(
        pl.when(pl.col("breach").is_not_null()).then(pl.format("guardrail {}", "breach"))
        .when(pl.col("failing").is_not_null()).then(pl.format("held by guardrail {}", "failing_line"))
        .otherwise(pl.lit(""))).to_series().to_numpy()
    is_primary = at.design.get_column("is_primary").to_numpy()
    return Guardrails(np.where(is_guard, judged.verdict, None), line, np.where(is_primary, held, ""),
                      is_primary & gathered.get_column("breach").is_not_null().to_numpy(),
                      gathered.get_column("status"),
                      np.where(is_primary, gathered.get_column("empty").fill_null(-1).to_numpy(), -1))


class Progress(NamedTuple):
    """How far each comparison is at each night (units of the night's epoch).

    Attributes:
        assigned_t, assigned_c: units first assigned to each arm in the epoch.
        days: days since the epoch's first assignment (NaN: none yet).
        users_in_both: users seen in a second arm (session-randomized experiments; NaN otherwise).
        verified_share: analysed units over assigned units.
        information: the share of the plan reached, the one figure of it everywhere: the smaller
            arm's analysed units over the analysed units its stored plan expects (planned units
            times the expected verified share), so that rule 5 holds exactly when it is >= 1.
        days_to_plan: days left at the current traffic (NaN when unreachable, unknown or stalled).
        power: power reached for the MDE at the control arm's units (primary rows).
        plan_reached: ``information >= 1`` (rule 5).
        stalled_since: night position of the last day a unit was first assigned, where no unit
            came for :data:`~zcl_assets.stats.decision.STALLED_AFTER_DAYS` days or more (-1: not stalled).
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
    stalled_since: np.ndarray


def _power(at: Nights, n_c: np.ndarray) -> np.ndarray:
    """Power reached at ``n_c`` control units by each primary comparison's kind (never the observed effect),
    with the variance reduction its plan counts on from CUPED (``cuped_planned_r2``)."""
    power = np.full(at.e.shape, np.nan)
    is_primary = at.design.get_column("is_primary").to_numpy()
    for kind in KINDS.values():
        sel = (at.kinds == kind.name) & is_primary
        if kind.power_formula is None or not sel.any():
            continue
        power[sel] = power_at(n_c[sel], at.column("mde_signed")[sel], at.column("baseline_mean")[sel],
                              at.column("comparison_alpha")[sel], at.column("ratio")[sel],
                              baseline_sd=at.column("unit_sd")[sel], metric=kind.power_formula,
                              inflation=at.column("inflation")[sel] * (1 - np.nan_to_num(at.column("cuped_planned_r2")[sel])))
    return power


def _per_night(looks: pl.DataFrame, grid: Grid, column: str) -> np.ndarray:
    """``[E, D]`` of a numeric column of ``looks`` (NaN on nights without a look)."""
    out = np.full(grid.shape, np.nan)
    out[grid.e(looks.get_column("experiment_id")), grid.d(looks.get_column("as_of"))] = \
        looks.get_column(column).cast(pl.Float64).to_numpy()
    return out


def progress(at: Nights, estimate: Estimate, validity: Validity, looks: pl.DataFrame, both_arms: pl.DataFrame,
             grid: Grid) -> Progress:
    """Units, shares, days and power of each comparison and night (``looks`` and ``both_arms``
    as in ``engine.LookInputs``)."""
    e, d, jt, jc = at.e, at.d, at.treatment, at.control
    assigned_t = validity.assigned[e, d, np.maximum(jt, 0)] * (jt >= 0)
    assigned_c = validity.assigned[e, d, np.maximum(jc, 0)] * (jc >= 0)
    days = _per_night(looks, grid, "days_since_first_assignment")[e, d]
    last_unit = looks.select("experiment_id", "as_of", (pl.col("last_unit_day") - grid.day0).dt.total_days())
    last = _per_night(last_unit, grid, "last_unit_day")[e, d]
    stalled = np.isfinite(last) & (d - last >= STALLED_AFTER_DAYS)
    both_users = np.cumsum(grid.tensor((grid.e(both_arms.get_column("experiment_id")),), grid.d(both_arms.get_column("day")),
                                       both_arms.get_column("users").cast(pl.Float64).to_numpy(), (), carry=False), axis=1)
    sessions_source = at.design.get_column("analysis_unit").to_numpy() == "session"
    v = at.column("expected_verified_share")
    # the analysed units the stored plan expects: planned units (rounded up as stored) times v
    need_c, need_t = at.column("planned_n_per_arm") * v, at.column("planned_n_treatment") * v
    n_t, n_c = estimate.treatment.n, estimate.control.n
    with np.errstate(invalid="ignore", divide="ignore"):
        verified_share = (n_t + n_c) / (assigned_t + assigned_c)
        info = np.minimum(n_t / need_t, n_c / need_c)
        left = np.maximum(np.maximum(need_t - n_t, 0) / (n_t / days), np.maximum(need_c - n_c, 0) / (n_c / days))
    reachable = at.design.get_column("plan_reachable").to_numpy()
    days_to_plan = np.where(reachable & (days > 0) & np.isfinite(left) & ~stalled, np.ceil(left), np.nan)
    return Progress(assigned_t, assigned_c, days, np.where(sessions_source, both_users[e, d], np.nan), verified_share,
                    info, days_to_plan, _power(at, n_c), info >= 1, np.where(stalled, last, -1).astype(np.int64))


def decision(at: Nights, interval: Interval, held: Guardrails, done: Progress, validity: Validity,
             burn: np.ndarray) -> Decision:
    """Rules 1 to 6 of DESIGN section 6 on the evidence of the chain (``stats.decision.decide``)."""
    refused = at.design.get_column("registration_refused").to_numpy()
    not_constant = (interval.empty_since >= 0) | (held.empty_since >= 0)
    invalid = np.where(refused, REFUSED, np.where(validity.invalid[at.e, at.d], STICKY,
                                                  np.where(not_constant, NOT_CONSTANT, ""))).astype(object)
    evidence = Evidence(
        cs_low=interval.low, cs_high=interval.high, mde=at.column("mde"), direction=at.column("sign"), invalid=invalid,
        burn_in=burn, held=held.held, plan_reached=done.plan_reached,
        plan_reachable=at.design.get_column("plan_reachable").to_numpy(),
    )
    return decide(evidence)
