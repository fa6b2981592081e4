"""Number and label formats shared by the text, HTML and Dagster renderings of an experiment.

Examples:
    >>> signed(0.07851)
    '+0.0785'
    >>> interval(-0.0123, 0.1447)
    '[-0.0123, +0.145]'
    >>> count(1402.0)
    '1,402'
    >>> share(0.8813)
    '88.1%'
    >>> signed(None)
    'not computed'
    >>> p_is(0.4321), p_is(1e-20)
    ('p = 0.432', 'p < 1e-16')
    >>> number(1e308), count(1e308)
    ('1e+308', '1e+308')
"""

from __future__ import annotations

import math

from zcl_assets.analysis.metrics import metric_spec
from zcl_assets.analysis.registration import MIN_HISTORY_USERS
from zcl_assets.reports.experiments import NOT_COMPUTED, Arm, ExperimentView
from zcl_assets.reports.methods import method_name

TABLE_ROWS = 50
"""Rows a table of a report shows (the UI's, the HTML page's); a last row says how many more there are."""

LARGE = 1e15
"""Figures from this size on are written with an exponent (``1e+308``), never as hundreds of digits."""


def _real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(value: object, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits; infinities as words; None as "not computed"."""
    if isinstance(value, float) and math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    if not _real(value):
        return NOT_COMPUTED
    if value != 0 and 10 ** digits <= abs(value) < LARGE:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def signed(value: object, digits: int = 3) -> str:
    text = number(value, digits)
    return "+" + text if _real(value) and value > 0 else text


def interval(low: object, high: object, digits: int = 3) -> str:
    if not (_real(low) and _real(high)):
        return NOT_COMPUTED
    return f"[{signed(low, digits)}, {signed(high, digits)}]"


def percent_interval(low: object, high: object) -> str:
    if not (_real(low) and _real(high)):
        return NOT_COMPUTED
    return f"[{low:+.1%}, {high:+.1%}]"


def count(value: object) -> str:
    if not _real(value):
        return NOT_COMPUTED if value is None else ("unreachable" if value == float("inf") else str(value))
    return f"{value:,.0f}" if abs(value) < LARGE else f"{value:.3g}"


def plan_reached(value: object, missing: str = NOT_COMPUTED) -> str:
    """The share of the plan reached, floored to a whole percent as in the decision's reason, so that
    a comparison 0.4% short of its plan never reads 100% (one figure of it everywhere)."""
    return f"{math.floor(value * 100):.0f}%" if _real(value) else missing


def share(value: object) -> str:
    return f"{value:.1%}" if _real(value) else NOT_COMPUTED


def p_value(value: object) -> str:
    if not _real(value):
        return NOT_COMPUTED
    return "< 1e-16" if value < 1e-16 else f"{value:.3g}"


def direction_words(direction: str | None) -> str:
    """``higher is better``, ``lower is better`` or ``direction not registered``."""
    return {"increase": "higher is better", "decrease": "lower is better"}.get(direction or "", "direction not registered")


def arm_figure(arm: Arm, binary: bool, per_user: bool = False) -> str:
    """``523/1,027 = 50.9%`` for a binary metric, ``39.7 (sd 16.1)`` for a continuous one.

    With ``per_user`` (a user-randomized experiment: a unit has several sessions) a binary
    figure is the mean over users of each user's success rate, the estimand analysed:
    ``812 successes over 640 users, mean per user 61.2%`` (successes / users can exceed 1).
    """
    if binary and per_user and arm.successes is not None and arm.units and arm.mean is not None:
        return f"{arm.successes:,} successes over {arm.units:,} users, mean per user {arm.mean:.1%}"
    if binary and arm.successes is not None and arm.units:
        return f"{arm.successes:,}/{arm.units:,} = {arm.successes / arm.units:.1%}"
    if arm.mean is None:
        return NOT_COMPUTED
    return f"{number(arm.mean, 4)} (sd {number(arm.sd)})"


def per_user(view: ExperimentView) -> bool:
    """Whether a unit of the experiment can hold several sessions: user-randomized, with sessions
    (an aggregate export has one row per unit and arm)."""
    return view.registration.get("randomization_unit") == "user" and view.sessions is not None


def figure_label(view: ExperimentView, binary: bool) -> str:
    """What :func:`arm_figure` shows for this experiment, for a table header."""
    if binary:
        return "successes over users, mean per user" if per_user(view) else "successes/units = rate"
    return "mean (sd)"


def is_binary(view: ExperimentView, metric: str) -> bool:
    """Whether the arms of ``metric`` are read by their successes: the metric registry's answer
    (``analysis.metrics``), for a metric the look compares."""
    return metric_spec(metric).binary and view.comparisons.filter(view.comparisons["metric"] == metric).height > 0


def p_is(value: object) -> str:
    """``p = 0.43`` or ``p < 1e-16``: a p-value after its letter."""
    text = p_value(value)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def srm_sentence(view: ExperimentView) -> str:
    """SRM status with both tests named, e.g. ``SRM ok: sequential multinomial test (...) p = 0.43, ...``."""
    if view.srm_status == NOT_COMPUTED:
        return f"SRM {NOT_COMPUTED}"
    tested = f"; tested for: {view.srm_test}" if view.srm_test else ""
    return (
        f"SRM {view.srm_status}: {method_name('srm_sequential', cite=True)} {p_is(view.srm_p)}, "
        f"{method_name('srm_chisquare')} {p_is(view.srm_chisquare_p)}{tested}"
    )


def progress_sentence(view: ExperimentView) -> str:
    """Progress to the planned sample and days left, e.g. ``73% of the planned 1,402 units per arm``."""
    if not view.plan_reachable:
        reason = view.plan_reason or "no plan"
        plan = f"planned sample unreachable ({reason})"
    else:
        fraction = view.information_fraction
        reached = plan_reached(fraction)
        plan = f"{reached} of the planned {count(view.planned_per_arm)} units per arm"
    days = days_left_text(view)
    days_text = f"{days} days left" if view.days_left is not None and not view.stalled_since else f"days left: {days}"
    power = f"; power at the MDE {view.power_at_mde:.0%}" if view.power_at_mde is not None else ""
    return f"{plan}; {days_text}{power}"


def days_left_text(view: ExperimentView) -> str:
    """Days left to the planned sample at current traffic; for a stalled experiment no figure (zero
    traffic reaches nothing) but the day of its last new unit (DESIGN section 6)."""
    if view.stalled_since:
        return f"none at zero traffic (stalled since {view.stalled_since})"
    return number(view.days_left, 2) if view.days_left is not None else NOT_COMPUTED


def quarantine_sentence(view: ExperimentView) -> str:
    """Quarantined (contract) and excluded (experience stage) rows of this experiment, by rule."""
    parts = []
    for label, stage_filter in (("quarantined", lambda s: s != "experience"), ("excluded", lambda s: s == "experience")):
        by_rule: dict[str, int] = {}  # a rule of several tables (duplicate_key) is counted once, summed
        for r in view.quarantine.iter_rows(named=True):
            if stage_filter(r["stage"]):
                by_rule[r["rule"]] = by_rule.get(r["rule"], 0) + r["rows"]
        total = sum(by_rule.values())
        detail = ", ".join(f"{rule} {rows:,}" for rule, rows in by_rule.items())
        parts.append(f"{label} {total:,} row{'' if total == 1 else 's'}" + (f" ({detail})" if detail else ""))
    return "; ".join(parts)


def verified_sentence(view: ExperimentView) -> str:
    if view.verified_share is None:
        if view.source == "sessions":
            return "verified share: none yet (no unit assigned yet)"
        return "verified share: not applicable (aggregate source, no outcomes)"
    both = view.users_in_both_arms
    both_text = f"; {both:,} users seen in both arms" if both else ""
    sessions = ""
    if view.sessions:
        verified = view.verified_sessions or 0
        kinds = ", ".join(f"{kind} {count(n)}" for kind, n in sorted(view.uncounted_kinds.items()))
        uncounted = f"; not counted by the evaluation contract, sessions with outcomes of kind {kinds}" if kinds else ""
        sessions = (f" ({count(verified)} of {count(view.sessions)} assigned sessions verified, {share(verified / view.sessions)}"
                    f"{uncounted})")
    unit = "users" if view.registration.get("randomization_unit") == "user" else "units"
    return f"verified share {share(view.verified_share)} of assigned {unit} analysed{sessions}{both_text}"


def lift(value: object, low: object, high: object) -> str:
    """Relative lift with its interval, e.g. ``+15.4% [+6.6%, +24.9%]``; "not computed" when undefined."""
    if not _real(value):
        return NOT_COMPUTED
    return f"{value * 100:+.3g}% {percent_interval(low, high)}"


def comparison_label(view: ExperimentView, row: dict) -> str:
    """``treatment vs control``, with the kind of its estimand when the metric has more than one (a
    user-randomized experiment reports the session-weighted ratio of sums beside the per-user mean that
    decides): ``treatment vs control (continuous mean, decides)``."""
    label = f"{row['treatment_arm']} vs {row['control_arm']}"
    if view.estimands.get((row["metric"], row["treatment_arm"]), 1) > 1 and row.get("metric_kind"):
        kind = str(row["metric_kind"]).replace("_", " ")
        label += f" ({kind}{', decides' if row.get('decision') else ', reported beside'})"
    return label



CUPED = "CUPED (Deng et al. 2013)"
"""How the reports name the variance reduction by each unit's pre-experiment mean."""


def cuped_sentence(view: ExperimentView, row: dict) -> str:
    """Whether CUPED adjusted a comparison and by how much, or why it did not, e.g. ``CUPED (Deng et
    al. 2013): variance reduced by 22.4%`` or ``no CUPED: no history (...)``; empty for an analysis
    that does not say (a warehouse written before CUPED)."""
    if row.get("cuped"):
        reduced = row.get("variance_reduction")
        return f"{CUPED}: variance reduced by " + (f"{reduced:.1%}" if _real(reduced) else NOT_COMPUTED)
    if "cuped" not in row or not view.plan:
        return ""
    if row.get("source") == "arm_snapshots":
        why = "an aggregate export has no unit to carry a pre-period mean"
    elif view.registration.get("cuped") is False:
        why = "not asked for by the registration"
    elif not view.plan.get("cuped"):
        why = f"no history (fewer than {MIN_HISTORY_USERS} units with a pre-period mean before registration)"
    elif row.get("metric_kind") == "ratio_of_sums":
        why = "a ratio of sums is not adjusted"
    else:
        why = "no unit of the comparison has a pre-period mean yet"
    return f"no CUPED: {why}"


def segment_arm(row: dict, arm: str) -> str:
    """One arm of a segment breakdown row (``arm``: ``control`` or ``treatment``): successes over sessions of
    a rate (``255 / 500``), else the mean with its sd over the sessions (``28.4 (sd 7.9), n 45``)."""
    n = row[f"n_{arm}"]
    if row.get(f"x_{arm}") is not None:
        return f"{count(row[f'x_{arm}'])} / {count(n)}"
    if not n:
        return "n 0"
    return f"{number(row[f'mean_{arm}'])} (sd {number(row[f'sd_{arm}'])}), n {count(n)}"


def segment_label(segment: str) -> str:
    """A breakdown segment as read: a budget ``50000.0`` as ``50,000``; a model or ``(none)`` as it is."""
    try:
        value = float(segment)
    except ValueError:
        return segment
    if not math.isfinite(value):
        return segment
    return count(value) if value == int(value) else f"{value:,.10g}"
