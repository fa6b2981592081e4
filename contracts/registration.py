"""The structure of an experiment registration, beyond its fields' types and domains.

A registration's ``arms`` must be a list of ``{name, payload, allocation}`` with 2 to
``MAX_ARMS`` distinct non-blank names and positive allocations summing to 1; ``control_arm``
must be one of them; ``guardrails`` a list of at most ``MAX_GUARDRAILS``
``{metric, direction, margin}`` with 0 < margin <= ``MAX_MAGNITUDE`` (<= 1 for the success
rate); ``metric_caps`` an object mapping ``time_minutes`` or ``tokens`` to a cap in
(0, ``MAX_MAGNITUDE``]. Each refusal names the bound it broke. These are rules over a few
registrations (one row each), checked in Python on the rows that passed the field rules;
the importers run the same checks before they land a registration.
"""

from __future__ import annotations

import json
import math

from contracts.tables import DIRECTIONS, MAX_ARMS, MAX_GUARDRAILS, MAX_MAGNITUDE, METRICS

ALLOCATION_TOLERANCE = 1e-6
"""Allocations must sum to 1 within this absolute tolerance."""

CAPPED_METRICS: tuple[str, ...] = ("time_minutes", "tokens")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def registration_problems(
    arms: str | None, control_arm: str | None, guardrails: str | None, metric_caps: str | None
) -> list[tuple[str, str]]:
    """Every structural problem of one registration, as (rule, reason); empty when sound.

    Args:
        arms: the ``arms`` JSON text.
        control_arm: the control arm's name.
        guardrails: the ``guardrails`` JSON text (None: no guardrails).
        metric_caps: the ``metric_caps`` JSON text (None: no caps).

    Returns:
        A list of ``(rule, reason)`` with rules ``bad_arms``, ``bad_allocation``,
        ``unknown_control_arm``, ``bad_guardrails`` and ``bad_metric_caps``. Never raises
        on any input.

    Examples:
        >>> registration_problems('[{"name": "a", "allocation": 0.5}, {"name": "b", "allocation": 0.5}]', "a", "[]", None)
        []
        >>> registration_problems('[{"name": "a", "allocation": 0.7}, {"name": "b", "allocation": 0.5}]', "c", None, None)[0][0]
        'bad_allocation'
    """
    problems: list[tuple[str, str]] = []
    try:
        parsed = json.loads(arms)
    except (TypeError, ValueError):  # not JSON text, or None
        parsed = None
    if not isinstance(parsed, list) or not all(isinstance(a, dict) for a in parsed):
        problems.append(("bad_arms", "arms must be a list of {name, payload, allocation}"))
    else:
        names = [a.get("name") for a in parsed]
        shares = [_number(a.get("allocation")) for a in parsed]
        # an aggregate export may declare no allocation at all: every share null means unknown
        unknown = all(a.get("allocation") is None for a in parsed)
        if len(names) > MAX_ARMS:
            problems.append(("bad_arms", f"{len(names)} arms; a registration has at most {MAX_ARMS}"))
            return problems  # nothing else of so many arms is worth reading
        if len(names) < 2 or not all(isinstance(n, str) and n.strip() for n in names) or len(set(names)) != len(names):
            problems.append(("bad_arms", f"arms need at least two distinct non-blank names, got {names}"))
        if not unknown and (any(s is None or s <= 0 for s in shares)
                            or abs(sum(shares) - 1.0) > ALLOCATION_TOLERANCE):
            problems.append(("bad_allocation", "allocations must be positive numbers summing to 1, or all null (unknown), "
                                               f"got {[a.get('allocation') for a in parsed]}"))
        if control_arm is not None and control_arm not in names:
            problems.append(("unknown_control_arm", f"control_arm {control_arm!r} is not one of the arms {names}"))
    problems += _guardrail_problems(guardrails)
    problems += _cap_problems(metric_caps)
    return problems


def _guardrail_problems(guardrails: str | None) -> list[tuple[str, str]]:
    try:
        rails = json.loads(guardrails) if guardrails is not None else []
    except (TypeError, ValueError):
        rails = None
    if not isinstance(rails, list):
        return [("bad_guardrails", f"guardrails must be a list of {{metric, direction, margin > 0}}, got {guardrails}")]
    if len(rails) > MAX_GUARDRAILS:
        return [("bad_guardrails", f"{len(rails)} guardrails; a registration has at most {MAX_GUARDRAILS}")]
    for g in rails:
        margin = _number(g.get("margin")) if isinstance(g, dict) else None
        if not isinstance(g, dict) or g.get("metric") not in METRICS or g.get("direction") not in DIRECTIONS or not (margin and margin > 0):
            return [("bad_guardrails", f"guardrails must be a list of {{metric, direction, margin > 0}}, got {guardrails}")]
        bound = 1.0 if g["metric"] == "success" else MAX_MAGNITUDE
        if margin > bound:
            return [("bad_guardrails", f"the margin of guardrail {g['metric']} is {margin:g}; it must be <= {bound:g}")]
    return []


def _cap_problems(metric_caps: str | None) -> list[tuple[str, str]]:
    try:
        caps = json.loads(metric_caps) if metric_caps is not None else {}
    except (TypeError, ValueError):
        caps = None
    if not isinstance(caps, dict) or any(k not in CAPPED_METRICS or not ((_number(v) or 0) > 0) for k, v in caps.items()):
        return [("bad_metric_caps", f"metric_caps must map {'/'.join(CAPPED_METRICS)} to a cap > 0, got {metric_caps}")]
    too_large = sorted(k for k, v in caps.items() if _number(v) > MAX_MAGNITUDE)
    if too_large:
        return [("bad_metric_caps", f"the cap of {', '.join(too_large)} must be <= {MAX_MAGNITUDE:g}")]
    return []
