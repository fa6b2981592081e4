"""The decision rule of DESIGN section 6, applied to one look of many comparisons at once.

:func:`decide` takes the :class:`Evidence` the look has gathered (rule 1's verdict, the
burn-in, the guardrails' hold, the progress to the plan) and applies the rule, first
match wins:

1. ``invalid``: the data cannot be trusted (``Evidence.invalid``: the sequential SRM
   fired, the control context digest drifted, verified outcomes are imbalanced, contract
   violations exceed their threshold, sticky until a reopen event; or the registration
   was refused).
2. ``continue`` (burn-in, ``Evidence.burn_in`` from :func:`burn_in`): an arm without
   analysable units, a binary arm with fewer than 10 successes or 10 failures, an arm
   with fewer units than the minimum sample, or fewer than 7 days since first assignment.
3. ``reject``: the primary CS lies entirely on the harmful side of zero.
4. ``adopt``: the primary CS lies entirely on the beneficial side and no guardrail holds it
   (``Evidence.held``, from :func:`guardrail_verdict` of each guardrail); otherwise
   ``continue`` with reason "held by guardrail <name>".
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
from typing import NamedTuple

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
    "NON_INFERIOR",
    "BREACHED",
    "NOT_YET_SHOWN",
    "STALLED_AFTER_DAYS",
    "Evidence",
    "Decision",
    "GuardrailVerdict",
    "burn_in",
    "guardrail_verdict",
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

STALLED_AFTER_DAYS = 7
"""An experiment with no new units for this many days is stalled (DESIGN section 6, "Epochs"):
reported as stalled since its last unit, with no days-left figure from zero traffic."""

NON_INFERIOR = "non-inferior"
"""Guardrail verdict: its CS lies on the beneficial side of minus its margin, in the metric's own
direction (above ``-margin`` for an increase metric, below ``+margin`` for a decrease metric)."""
BREACHED = "breached"
"""Guardrail verdict: its CS lies wholly beyond its margin on the harmful side; it holds ``adopt``
and is an alarm reported first."""
NOT_YET_SHOWN = "not yet shown"
"""Guardrail verdict: neither of the above (yet); it holds ``adopt``."""


class Evidence(NamedTuple):
    """What the rule reads of one look: one entry per comparison, arrays of one shape.

    Attributes:
        cs_low: Lower end of the deciding CS, treatment minus control (metric units).
        cs_high: Upper end.
        mde: Registered MDE (absolute; its sign is ignored).
        direction: +1 when an increase is beneficial, -1 when a decrease is.
        invalid: Rule 1: why the data cannot be trusted, ``""`` where it can.
        burn_in: Rule 2: why the comparison is still in burn-in (:func:`burn_in`), ``""``
            past it.
        held: Rule 4: why a guardrail holds ``adopt`` ("held by guardrail g"), ``""``
            where none does.
        plan_reached: Rule 5: both arms are at or past their planned sample.
        plan_reachable: False when the planned sample is unreachable; only changes the
            words of rule 6.
    """

    cs_low: ArrayLike
    cs_high: ArrayLike
    mde: ArrayLike
    direction: ArrayLike = 1
    invalid: ArrayLike = ""
    burn_in: ArrayLike = ""
    held: ArrayLike = ""
    plan_reached: ArrayLike = False
    plan_reachable: ArrayLike = True


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


def _text(x, shape) -> np.ndarray:
    return np.broadcast_to(np.asarray(x, dtype=object), shape)


def burn_in(n_t: ArrayLike, n_c: ArrayLike, min_samples: ArrayLike, days_since_first_assignment: ArrayLike,
            fewest_count: ArrayLike = np.inf) -> np.ndarray:
    """Rule 2: why each comparison is still in burn-in, ``""`` where it is past it.

    The first reason that applies: an arm has no analysable units; an arm has fewer than
    :data:`BURN_IN_MIN_COUNT` successes or failures (binary metrics); an arm has fewer
    units than the minimum sample; fewer than :data:`BURN_IN_MIN_DAYS` days since the
    first assignment (NaN days: no assignment yet, burn-in).

    Args:
        n_t: Treatment units at this look.
        n_c: Control units at this look.
        min_samples: Declared minimum units per arm.
        days_since_first_assignment: Days (float) since the first assignment.
        fewest_count: The fewest successes or failures of either arm (NaN: not known,
            burn-in); ``inf`` for a metric without successes.

    Returns:
        Array (dtype object) of reasons, the broadcast shape of the inputs.

    Examples:
        >>> burn_in([500, 0], [500, 500], 100, 10.0).tolist()
        ['', 'burn-in: an arm has no analysable units yet']
        >>> burn_in(500, 500, 100, 10.0, fewest_count=9).tolist()
        'burn-in: an arm has fewer than 10 successes or failures'
    """
    nt, nc, ms, days, fewest = (np.asarray(x, dtype=float) for x in
                                (n_t, n_c, min_samples, days_since_first_assignment, fewest_count))
    shape = np.broadcast_shapes(nt.shape, nc.shape, ms.shape, days.shape, fewest.shape)
    reason = np.full(shape, "", dtype=object)  # pragma: no mutate
    for cond, why in (
        (~((nt > 0) & (nc > 0)), "burn-in: an arm has no analysable units yet"),
        (~(fewest >= BURN_IN_MIN_COUNT), f"burn-in: an arm has fewer than {BURN_IN_MIN_COUNT} successes or failures"),
        (~((nt >= ms) & (nc >= ms)), "burn-in: an arm has fewer units than the minimum sample"),
        (~(days >= BURN_IN_MIN_DAYS), f"burn-in: fewer than {BURN_IN_MIN_DAYS} days since first assignment"),
    ):
        reason[(reason == "") & np.broadcast_to(cond, shape)] = why
    return reason


class GuardrailVerdict(NamedTuple):
    """Each guardrail comparison's verdict.

    Attributes:
        verdict: Array (dtype object) of :data:`NON_INFERIOR`, :data:`BREACHED` or
            :data:`NOT_YET_SHOWN`.
        boundary: The margin's end in the metric's own units (treatment minus control):
            ``-margin`` for an increase metric, ``+margin`` for a decrease metric, so that
            the CS is read against it without a sign flip.
    """

    verdict: np.ndarray
    boundary: np.ndarray


def guardrail_verdict(cs_low: ArrayLike, cs_high: ArrayLike, direction: ArrayLike, margin: ArrayLike,
                      constant_equal: ArrayLike = False) -> GuardrailVerdict:
    """Rule 4's reading of a guardrail, in the metric's own direction (DESIGN section 6).

    ``non-inferior`` when its CS lies on the beneficial side of the margin's end (for an
    increase metric, ``cs_low > -margin``; for a decrease metric, ``cs_high < +margin``);
    ``breached`` when it lies wholly beyond it on the harmful side (``cs_high < -margin``,
    resp. ``cs_low > +margin``); otherwise, and for an undefined CS, ``not yet shown``. A
    guardrail whose arms both have zero variance and equal means (``constant_equal``) has no
    CS, but its difference is exactly zero: ``non-inferior``.

    Args:
        cs_low: Lower end of the guardrail's CS, treatment minus control (metric units).
        cs_high: Upper end.
        direction: +1 when an increase of the guardrail metric is beneficial, -1 otherwise.
        margin: The non-inferiority margin (positive, metric units).
        constant_equal: Both arms have zero variance and the same mean.

    Returns:
        :class:`GuardrailVerdict` of the broadcast shape.

    Examples:
        >>> guardrail_verdict([-1.0, -3.0, -5.0], [4.0, 1.0, -2.5], 1, 2.0).verdict.tolist()
        ['non-inferior', 'not yet shown', 'breached']
        >>> v = guardrail_verdict(2475.0, 5214.0, -1, 2000.0)
        >>> v.verdict.tolist(), float(v.boundary)
        ('breached', 2000.0)
        >>> guardrail_verdict(np.nan, np.nan, -1, 2000.0, constant_equal=True).verdict.tolist()
        'non-inferior'
    """
    lo, hi, sign, m, equal = (np.asarray(x, dtype=float) for x in (cs_low, cs_high, direction, margin, constant_equal))
    shape = np.broadcast_shapes(lo.shape, hi.shape, sign.shape, m.shape, equal.shape)
    increase = np.broadcast_to(sign > 0, shape)
    boundary = np.where(increase, -m, m)
    with np.errstate(invalid="ignore"):
        ok = np.where(increase, lo > boundary, hi < boundary) & np.isfinite(lo) & np.isfinite(hi)
        breached = np.where(increase, hi < boundary, lo > boundary) & np.isfinite(lo) & np.isfinite(hi)
    ok = ok | (np.broadcast_to(equal, shape) > 0)
    verdict = np.where(ok, NON_INFERIOR, np.where(breached, BREACHED, NOT_YET_SHOWN)).astype(object)
    return GuardrailVerdict(verdict, np.broadcast_to(boundary, shape).astype(float))


def decide(evidence: Evidence) -> Decision:
    """Apply the DESIGN section 6 rule (first match wins) to one look.

    Args:
        evidence: The :class:`Evidence` of every comparison; its fields broadcast to a
            common shape ``S``.

    Returns:
        A :class:`Decision` of shape ``S``. NaN intervals never decide: an undefined
        CS gives ``continue``.

    Examples:
        >>> decide(Evidence(cs_low=0.01, cs_high=0.05, mde=0.02)).label.tolist()
        'adopt'
        >>> decide(Evidence(cs_low=-0.01, cs_high=0.01, mde=0.02, plan_reached=True)).label.tolist()
        'no_effect'
    """
    lo = np.asarray(evidence.cs_low, dtype=float)
    hi = np.asarray(evidence.cs_high, dtype=float)
    sign = np.where(np.asarray(evidence.direction, dtype=float) < 0, -1.0, 1.0)
    # the beneficial-direction interval; np.minimum and np.maximum give NaN when either end is NaN
    b_lo = np.minimum(sign * lo, sign * hi)
    b_hi = np.maximum(sign * lo, sign * hi)
    m = np.abs(np.asarray(evidence.mde, dtype=float))
    invalid, burn, held = (np.asarray(x, dtype=object) for x in (evidence.invalid, evidence.burn_in, evidence.held))
    reached = np.asarray(evidence.plan_reached, dtype=bool)
    reachable = np.asarray(evidence.plan_reachable, dtype=bool)
    shape = np.broadcast_shapes(b_lo.shape, b_hi.shape, m.shape, invalid.shape, burn.shape, held.shape, reached.shape,
                                reachable.shape)
    label = np.full(shape, "", dtype=object)
    reason = np.full(shape, "", dtype=object)  # pragma: no mutate
    rule = np.zeros(shape, dtype=np.int64)

    def assign(cond, lab, why, number):
        free = (label == "") & np.broadcast_to(np.asarray(cond, dtype=bool), shape)
        label[free] = lab
        rule[free] = number
        reason[free] = _text(why, shape)[free]

    assign(_text(invalid, shape) != "", INVALID, invalid, 1)
    assign(_text(burn, shape) != "", CONTINUE, burn, 2)
    assign(np.isnan(b_lo) | np.isnan(b_hi), CONTINUE, "interval undefined (no variance in either arm, or no plan tuning)", 6)
    assign(b_hi < 0, REJECT, "CS entirely on the harmful side of zero", 3)
    beneficial = b_lo > 0
    assign(beneficial & (_text(held, shape) != ""), CONTINUE, held, 4)
    assign(beneficial, ADOPT, "CS entirely on the beneficial side of zero", 4)
    inside = (b_lo > -m) & (b_hi < m)
    assign(reached & inside, NO_EFFECT, "planned sample reached; CS inside (-MDE, +MDE)", 5)
    assign(reached, INCONCLUSIVE, "planned sample reached; CS neither excludes zero nor lies inside (-MDE, +MDE)", 5)
    assign(~reachable, CONTINUE, "collecting: the planned sample is unreachable, so only adopt or reject can end the "
           "experiment", 6)
    assign(np.ones(shape, dtype=bool), CONTINUE, "collecting: planned sample not reached", 6)  # pragma: no mutate
    return Decision(label=label, reason=reason, rule=rule)
