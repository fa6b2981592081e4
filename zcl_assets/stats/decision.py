"""The decision rule of DESIGN section 6, applied to one look of many comparisons at once.

First match wins:

1. ``invalid``: sequential SRM fired, control context digest drifted, verified outcomes
   imbalanced, contract violations over threshold, or already invalid and not reopened.
2. ``continue`` (burn-in): a binary arm with fewer than 10 successes or 10 failures, an arm
   with fewer units than the minimum sample, or fewer than 7 days since first assignment.
3. ``reject``: the primary CS lies entirely on the harmful side of zero.
4. ``adopt``: the primary CS lies entirely on the beneficial side and every guardrail CS
   lower bound (beneficial direction) is above minus its margin; otherwise ``continue``
   with reason "held by guardrail <name>".
5. At or past the planned sample: ``no_effect`` if the CS lies inside (-MDE, +MDE), else
   ``inconclusive``.
6. Otherwise ``continue``.

An undefined primary CS (NaN, e.g. zero variance) after burn-in gives ``continue`` with
reason "interval undefined": it never produces a decision. A comparison whose arm has no
analysable units is ``continue`` (burn-in) with that reason: it is reported, never dropped.
An unreachable plan never reaches rule 5, and rule 6 says so.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple, Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Label",
    "ADOPT",
    "REJECT",
    "NO_EFFECT",
    "INCONCLUSIVE",
    "CONTINUE",
    "INVALID",
    "BURN_IN_MIN_COUNT",
    "BURN_IN_MIN_DAYS",
    "Decision",
    "decide",
]


class Label(str, Enum):
    """Decision labels; each value is the string stored in tables."""

    ADOPT = "adopt"
    REJECT = "reject"
    NO_EFFECT = "no_effect"
    INCONCLUSIVE = "inconclusive"
    CONTINUE = "continue"
    INVALID = "invalid"


ADOPT = Label.ADOPT.value
REJECT = Label.REJECT.value
NO_EFFECT = Label.NO_EFFECT.value
INCONCLUSIVE = Label.INCONCLUSIVE.value
CONTINUE = Label.CONTINUE.value
INVALID = Label.INVALID.value

BURN_IN_MIN_COUNT = 10
"""Binary burn-in: every arm needs at least this many successes and failures."""
BURN_IN_MIN_DAYS = 7
"""Burn-in: no decision before this many days since the first assignment."""


class Decision(NamedTuple):
    """Decision of one look.

    Attributes:
        label: Array (dtype object) of label strings (:class:`Label` values), one per
            comparison, broadcast shape of the inputs.
        reason: Array (dtype object) of short human-readable reasons: the rule that
            matched, in words.
        rule: Array (int) of the rule number (1 to 6) that matched.
    """

    label: np.ndarray
    reason: np.ndarray
    rule: np.ndarray


def _arr(x, dtype=float):
    return np.asarray(x, dtype=dtype)


def decide(
    ci_low: ArrayLike,
    ci_high: ArrayLike,
    mde: ArrayLike,
    n_t: ArrayLike,
    n_c: ArrayLike,
    n_plan: ArrayLike,
    min_samples: ArrayLike,
    days_since_first_assignment: ArrayLike,
    direction: ArrayLike = 1,
    allocation_ratio: ArrayLike = 1.0,
    successes_t: ArrayLike | None = None,
    failures_t: ArrayLike | None = None,
    successes_c: ArrayLike | None = None,
    failures_c: ArrayLike | None = None,
    srm_fired: ArrayLike = False,
    baseline_drift: ArrayLike = False,
    outcome_imbalance: ArrayLike = False,
    contract_violations_exceeded: ArrayLike = False,
    already_invalid: ArrayLike = False,
    guardrail_ci_low: ArrayLike | None = None,
    guardrail_ci_high: ArrayLike | None = None,
    guardrail_direction: ArrayLike = 1,
    guardrail_margin: ArrayLike | None = None,
    guardrail_names: Sequence[str] | None = None,
    registration_refused: ArrayLike = False,
    plan_reachable: ArrayLike = True,
    guardrail_hold: ArrayLike | None = None,
) -> Decision:
    """Apply the DESIGN section 6 rule (first match wins) to one look.

    Every per-comparison argument broadcasts to a common shape ``S`` (one entry per
    experiment comparison). Guardrail arguments have shape ``S + (g,)``.

    Args:
        ci_low: Lower end of the primary CS for treatment minus control (metric units).
        ci_high: Upper end of the primary CS.
        mde: Registered MDE (absolute; its sign is ignored).
        n_t: Treatment units at this look.
        n_c: Control units at this look.
        n_plan: Planned control-arm sample (``PlannedSample.n_plan``); the treatment
            arm's is ``n_plan * allocation_ratio``. ``inf`` never reaches rule 5.
        min_samples: Declared minimum units per arm.
        days_since_first_assignment: Days (float) since the first assignment; NaN is
            treated as burn-in.
        direction: +1 when an increase is beneficial, -1 when a decrease is.
        allocation_ratio: Planned treatment-to-control ratio of units.
        successes_t: Binary metrics only: treatment successes (all four counts or none).
        failures_t: Treatment failures.
        successes_c: Control successes.
        failures_c: Control failures.
        srm_fired: The sequential SRM test on units fired.
        baseline_drift: The control context digest changed while live.
        outcome_imbalance: Verified outcomes are imbalanced between arms.
        contract_violations_exceeded: Contract violations exceed their threshold.
        already_invalid: A previous look was ``invalid`` and no reopen event followed
            (invalid is sticky).
        guardrail_ci_low: Guardrail CS lower ends, treatment minus control, shape
            ``S + (g,)``.
        guardrail_ci_high: Guardrail CS upper ends, same shape.
        guardrail_direction: +1/-1 per guardrail (beneficial direction), broadcast to
            ``S + (g,)``.
        guardrail_margin: Non-inferiority margins (positive, metric units), broadcast
            to ``S + (g,)``.
        guardrail_names: Names for the reasons, length g.
        registration_refused: The registration was refused (no alpha slot free in its
            family): rule 1.
        plan_reachable: False when the planned sample is unreachable (``n_plan = inf``);
            only changes the words of rule 6.
        guardrail_hold: Alternative to the guardrail intervals when the caller has
            already read them: per comparison, "" when every guardrail is shown
            non-inferior, else the reason that holds adopt ("held by guardrail g").

    Returns:
        A :class:`Decision` of shape ``S``. NaN intervals never decide: an undefined
        primary CS gives ``continue`` and an undefined guardrail CS holds adoption.

    Raises:
        ValueError: If only some binary counts are given, or guardrail lower ends,
            upper ends and margins are not given together (argument structure, never
            data values).
    """
    lo = _arr(ci_low)
    hi = _arr(ci_high)
    sign = np.where(_arr(direction) < 0, -1.0, 1.0)
    # the beneficial-direction interval; np.minimum and np.maximum give NaN when either end is NaN
    b_lo = np.minimum(sign * lo, sign * hi)
    b_hi = np.maximum(sign * lo, sign * hi)
    m = np.abs(_arr(mde))
    nt, nc = _arr(n_t), _arr(n_c)
    plan, ms = _arr(n_plan), _arr(min_samples)
    days = _arr(days_since_first_assignment)

    counts = (successes_t, failures_t, successes_c, failures_c)
    given = [c is not None for c in counts]
    if any(given) and not all(given):
        raise ValueError("give all four binary counts or none")

    invalid_flags = {
        "registration refused: no alpha slot was free in its organization and task type": registration_refused,
        "sequential SRM fired": srm_fired,
        "control context digest drifted": baseline_drift,
        "verified outcomes imbalanced between arms": outcome_imbalance,
        "contract violations exceed threshold": contract_violations_exceeded,
        "invalid since an earlier look (no reopen event)": already_invalid,
    }
    pieces = [b_lo, b_hi, m, nt, nc, plan, ms, days]
    pieces += [_arr(f, bool) for f in invalid_flags.values()]
    if all(given):
        pieces += [_arr(c) for c in counts]
    shape = np.broadcast_shapes(*(p.shape for p in pieces))

    has_guardrails = guardrail_ci_low is not None or guardrail_ci_high is not None
    if has_guardrails:
        if guardrail_margin is None or guardrail_ci_low is None or guardrail_ci_high is None:
            raise ValueError("guardrails need ci_low, ci_high and margin together")
        g_lo, g_hi = _arr(guardrail_ci_low), _arr(guardrail_ci_high)
        g_sign = np.where(_arr(guardrail_direction) < 0, -1.0, 1.0)
        g_margin = np.abs(_arr(guardrail_margin))
        g_shape = np.broadcast_shapes(g_lo.shape, g_hi.shape, g_sign.shape, g_margin.shape)
        g_shape = g_shape or (1,)
        shape = np.broadcast_shapes(shape, g_shape[:-1])

    label = np.full(shape, "", dtype=object)
    reason = np.full(shape, "", dtype=object)
    rule = np.zeros(shape, dtype=np.int64)

    def assign(cond, lab, why, number):
        cond = np.broadcast_to(np.asarray(cond, dtype=bool), shape)
        free = (label == "") & cond
        label[free] = lab
        rule[free] = number
        if isinstance(why, np.ndarray):
            reason[free] = np.broadcast_to(why, shape)[free]
        else:
            reason[free] = why

    # Rule 1: invalid (sticky).
    for why, flag in invalid_flags.items():
        assign(_arr(flag, bool), INVALID, why, 1)

    # Rule 2: burn-in (an arm without analysable units first: it is reported, never dropped).
    assign(~((nt > 0) & (nc > 0)), CONTINUE, "burn-in: an arm has no analysable units yet", 2)
    if all(given):
        low = np.zeros(shape, dtype=bool)
        for c in counts:
            c = _arr(c)
            low |= ~(c >= BURN_IN_MIN_COUNT)
        assign(low, CONTINUE,
               f"burn-in: an arm has fewer than {BURN_IN_MIN_COUNT} successes or failures", 2)
    assign(~((nt >= ms) & (nc >= ms)), CONTINUE,
           "burn-in: an arm has fewer units than the minimum sample", 2)
    assign(~(days >= BURN_IN_MIN_DAYS), CONTINUE,
           f"burn-in: fewer than {BURN_IN_MIN_DAYS} days since first assignment", 2)
    assign(np.isnan(b_lo) | np.isnan(b_hi), CONTINUE,
           "interval undefined (no variance in either arm, or no plan tuning)", 6)

    # Rule 3: reject.
    assign(b_hi < 0, REJECT, "CS entirely on the harmful side of zero", 3)

    # Rule 4: adopt, unless a guardrail holds it.
    beneficial = b_lo > 0
    held_reason = np.full(shape, "", dtype=object)
    if has_guardrails:
        full = shape + g_shape[-1:]
        g_lo, g_hi, g_sign, g_margin = (np.broadcast_to(x, full) for x in
                                         (g_lo, g_hi, g_sign, g_margin))
        g_ben_lo = np.minimum(g_sign * g_lo, g_sign * g_hi)
        g_ben_lo = np.where(np.isnan(g_lo) | np.isnan(g_hi), np.nan, g_ben_lo)
        ok = g_ben_lo > -g_margin  # NaN -> not shown non-inferior
        n_g = full[-1]
        names = list(guardrail_names) if guardrail_names is not None else [
            f"g{i}" for i in range(n_g)]
        for i in reversed(range(n_g)):  # first failing guardrail names the reason
            held_reason = np.where(~ok[..., i], f"held by guardrail {names[i]}", held_reason)
    if guardrail_hold is not None:
        hold = np.broadcast_to(np.asarray(guardrail_hold, dtype=object), shape)
        held_reason = np.where(held_reason != "", held_reason, hold)
    held = held_reason != ""
    assign(beneficial & held, CONTINUE, held_reason, 4)
    assign(beneficial, ADOPT, "CS entirely on the beneficial side of zero", 4)

    # Rule 5: at or past the planned sample.
    reached = (nc >= plan) & (nt >= plan * _arr(allocation_ratio))
    inside = (b_lo > -m) & (b_hi < m)
    assign(reached & inside, NO_EFFECT, "planned sample reached; CS inside (-MDE, +MDE)", 5)
    assign(reached, INCONCLUSIVE, "planned sample reached; CS neither excludes zero nor "
           "lies inside (-MDE, +MDE)", 5)

    # Rule 6.
    reachable = np.broadcast_to(_arr(plan_reachable, bool), shape)
    assign(~reachable, CONTINUE, "collecting: the planned sample is unreachable, so only "
           "adopt or reject can end the experiment", 6)
    assign(np.ones(shape, dtype=bool), CONTINUE, "collecting: planned sample not reached", 6)
    return Decision(label=label, reason=reason, rule=rule)
