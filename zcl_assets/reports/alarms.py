"""The alarms of one experiment, read from what its look stores: what a report shows first.

One function per alarm, each reading only the stored columns of the look (and the look
history), so that when the analysis stores a verdict of its own (a guardrail ``breached``, an
experiment ``stalled``) only that function changes. :func:`alarms` lists them in the fixed
order of :data:`SEVERITY`; :func:`attention` and :func:`attention_rank` place an experiment in
the order every report sorts by (:data:`ATTENTION_ORDER`).

- ``srm_mismatch``: the sequential sample-ratio test fired (DESIGN section 6, rule 1).
- ``baseline_drift``: the control arm's context digest changed while the experiment was live.
- ``outcome_imbalance``: verified outcomes do not follow the split of the units assigned.
- ``contract_violations``: too many of the experiment's rows were quarantined or excluded.
- ``invalid``: the look says ``invalid`` for a reason none of the above names (for example an
  effect that is not constant over time).
- ``guardrail_breached``: a guardrail's confidence sequence lies wholly beyond its margin on
  the harmful side (DESIGN section 6, "Guardrails").
- ``stalled``: no new units for :data:`STALLED_AFTER_DAYS` days while the experiment still needs
  units to decide (DESIGN section 6, "Epochs"); its days-left figure is then not shown.
- ``not_checked``: a check could not read the look (it is named, and the other checks still run).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from typing import NamedTuple, Protocol

import polars as pl

from zcl_assets.reports.methods import NOT_COMPUTED
from zcl_assets.stats.decision import Label


class ExperimentView(Protocol):
    """What the alarms read of an experiment as of its latest look: the members of
    ``reports.experiments.ExperimentView`` they use (that view imports this module to sort by it,
    so this module names what it needs instead of importing the view)."""

    registration: dict
    as_of: str
    comparisons: pl.DataFrame
    history: pl.DataFrame

    @property
    def control_arm(self) -> str: ...
    @property
    def decision(self) -> str: ...
    @property
    def decision_reason(self) -> str: ...
    @property
    def status(self) -> str | None: ...
    @property
    def srm_alarm(self) -> bool: ...
    @property
    def srm_p(self) -> float | None: ...
    @property
    def srm_test(self) -> str | None: ...
    @property
    def quarantined_rows(self) -> int: ...
    @property
    def excluded_rows(self) -> int: ...
    def primary_rows(self) -> list[dict]: ...
    def role_of(self, metric: str) -> str: ...
    def direction_of(self, metric: str) -> str | None: ...
    def margin_of(self, metric: str) -> float | None: ...

STALLED_AFTER_DAYS = 7
"""Days without a new unit after which an experiment that still needs units is stalled (DESIGN section 6)."""

SYMBOL = "\u26a0"
"""The mark of an alarm in every rendering (U+26A0 WARNING SIGN, present in the common system fonts)."""


class Alarm(NamedTuple):
    """One alarm: ``kind`` (an entry of :data:`SEVERITY`), a short ``title`` for a heading or a
    table cell, and the ``detail`` with the figures behind it, in words."""

    kind: str
    title: str
    detail: str


SEVERITY = (
    "srm_mismatch", "baseline_drift", "outcome_imbalance", "contract_violations", "invalid",
    "guardrail_breached", "stalled", "not_checked",
)
"""Alarm kinds, most severe first: the order of :func:`alarms` and of "what needs attention first"."""

LABELS = {
    "srm_mismatch": "SRM mismatch", "baseline_drift": "baseline drift", "outcome_imbalance": "outcomes imbalanced",
    "contract_violations": "rows rejected", "invalid": "invalid", "guardrail_breached": "guardrail breached",
    "stalled": "stalled", "not_checked": "alarm not checked",
}
"""The name of each kind of alarm where experiments are counted by kind (the night's index)."""

INVALID_KINDS = frozenset(SEVERITY[:5])
"""Alarms that come with an ``invalid`` decision (rule 1); the others leave the decision as it is."""

ATTENTION_ORDER = ("invalid", "alarm", "decided", "continuing", NOT_COMPUTED)
"""Groups of every report, what needs attention first: an invalid look; a breached guardrail or a
stalled experiment; a decision to act on; still collecting; no decision written."""

DECIDED_ORDER = (Label.REJECT.value, Label.ADOPT.value, Label.NO_EFFECT.value, Label.INCONCLUSIVE.value)
"""Order within the decided group: a harmful change first, then one to ship, then the nulls."""


def _real(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _p(value: float) -> str:
    return "< 1e-16" if value < 1e-16 else f"= {value:.3g}"


def srm_mismatch(view: ExperimentView) -> Alarm | None:
    """The allocation check fired: the units assigned do not follow the registered shares."""
    if not view.srm_alarm:
        return None
    rows = view.primary_rows()
    counts = []
    if rows and _real(rows[0].get("srm_units_control")):
        counts.append(f"{view.control_arm} {int(rows[0]['srm_units_control']):,}")
        counts += [f"{r['treatment_arm']} {int(r['srm_units_treatment']):,}" for r in rows if _real(r.get("srm_units_treatment"))]
    shares = [f"{a['allocation']:.3g}" for a in view.registration.get("arms", []) if _real(a.get("allocation"))]
    against = f" against the registered shares {' / '.join(shares)}" if shares else ""
    units = f"units assigned {', '.join(counts)}{against}; " if counts else ""
    p = f"sequential test p {_p(view.srm_p)}" if _real(view.srm_p) else "sequential test fired"
    tested = f" (tested for: {view.srm_test})" if view.srm_test else ""
    return Alarm("srm_mismatch", "SRM mismatch", f"{units}{p}{tested}: do not trust any figure of this experiment")


def baseline_drift(view: ExperimentView) -> Alarm | None:
    """The control arm's context changed while the experiment was live."""
    if not any(r.get("baseline_drift") is True for r in view.primary_rows()):
        return None
    return Alarm("baseline_drift", "baseline drift",
                 f"the context digest of the control arm {view.control_arm} changed while the experiment was live")


def outcome_imbalance(view: ExperimentView) -> Alarm | None:
    """Verified outcomes do not follow the split of the units assigned (anytime-valid test)."""
    rows = view.primary_rows()
    if not any(r.get("imbalance_fired") is True for r in rows) or view.decision != Label.INVALID.value:
        return None
    values = [r["imbalance_p_value"] for r in rows if _real(r.get("imbalance_p_value"))]
    p = f" (p {_p(min(values))})" if values else ""
    return Alarm("outcome_imbalance", "outcomes imbalanced",
                 f"verified outcomes do not follow the split of the units assigned{p}")


def contract_violations(view: ExperimentView) -> Alarm | None:
    """Too many of the experiment's rows were quarantined or excluded (anytime-valid test)."""
    rows = view.primary_rows()
    if not any(r.get("contract_violations_fired") is True for r in rows) or view.decision != Label.INVALID.value:
        return None
    shares = [r["contract_violation_share"] for r in rows if _real(r.get("contract_violation_share"))]
    share = f"{max(shares):.1%} of its rows" if shares else "too many of its rows"
    return Alarm("contract_violations", "rows rejected",
                 f"{share} quarantined or excluded ({view.quarantined_rows:,} quarantined, {view.excluded_rows:,} excluded)")


def other_invalid(view: ExperimentView) -> Alarm | None:
    """An ``invalid`` look for a reason that no other alarm names: the analysis's own words."""
    if view.decision != Label.INVALID.value:
        return None
    named = (srm_mismatch, baseline_drift, outcome_imbalance, contract_violations)
    if any(check(view) for check in named):
        return None
    return Alarm("invalid", "invalid", view.decision_reason or "the look says invalid")


def guardrail_breached(view: ExperimentView) -> Alarm | None:
    """A guardrail whose confidence sequence lies wholly beyond its margin on the harmful side
    (its difference is treatment minus control, in the metric's own units and direction)."""
    breached = []
    metrics = view.comparisons.get_column("metric").unique().to_list() if "metric" in view.comparisons.columns else []
    guardrails = [m for m in metrics if view.role_of(m) == "guardrail"]
    for r in view.comparisons.filter(pl.col("metric").is_in(guardrails)).iter_rows(named=True) if guardrails else []:
        if not (_real(r.get("cs_low")) and _real(r.get("cs_high"))):
            continue
        margin = view.margin_of(r["metric"])
        if margin is None:
            continue
        if view.direction_of(r["metric"]) == "decrease" and r["cs_low"] > margin:
            breached.append((r, f"CS [{r['cs_low']:.4g}, {r['cs_high']:.4g}] lies wholly above the margin +{margin:.4g}"))
        elif view.direction_of(r["metric"]) == "increase" and r["cs_high"] < -margin:
            breached.append((r, f"CS [{r['cs_low']:.4g}, {r['cs_high']:.4g}] lies wholly below the margin -{margin:.4g}"))
    if not breached:
        return None
    metrics = sorted({r["metric"] for r, _ in breached})
    detail = "; ".join(f"{r['metric']}, {r['treatment_arm']} vs {r['control_arm']}: {why}" for r, why in breached)
    return Alarm("guardrail_breached", f"guardrail {', '.join(metrics)} breached", detail + " (harmful side)")


def last_new_units(view: ExperimentView) -> str | None:
    """The day of the last look at which the experiment had more units assigned than at the look
    before (the first look with units counts as one); None without units in any look."""
    history = view.history
    if history.height == 0:
        return None
    assigned = "srm_units_control" in history.columns and history.get_column("srm_units_control").null_count() == 0
    control, treatment = ("srm_units_control", "srm_units_treatment") if assigned else ("n_control", "n_treatment")
    # Per look: control once (its largest count), every treatment arm summed; a look without a control count has
    # no total. Plain Python: a history has one row per look and arm, and a polars query per view cost 1 ms.
    controls: dict[dt.date, int | None] = {}
    treatments: dict[dt.date, int] = {}
    for day, c, t in zip(*(history.get_column(name).to_list() for name in ("as_of", control, treatment))):
        if c is not None:
            controls[day] = c if controls.get(day) is None else max(controls[day], c)
        else:
            controls.setdefault(day, None)
        treatments[day] = treatments.get(day, 0) + (t or 0)
    last, before = None, 0
    for day in sorted(controls):
        if controls[day] is None:
            continue
        units = controls[day] + treatments[day]
        if units > before:
            last = day
        before = max(before, units)
    return last.isoformat() if last is not None else None


def stalled(view: ExperimentView) -> Alarm | None:
    """No new units for :data:`STALLED_AFTER_DAYS` days or more while the experiment still needs units to
    decide (``continue`` or no decision) and is neither completed nor cancelled."""
    if view.decision not in (Label.CONTINUE.value, NOT_COMPUTED) or view.status in ("completed", "cancelled"):
        return None
    since = last_new_units(view)
    if since is None:
        return None
    idle = (dt.date.fromisoformat(view.as_of) - dt.date.fromisoformat(since)).days
    if idle < STALLED_AFTER_DAYS:
        return None
    return Alarm("stalled", f"stalled since {since}",
                 f"no new units in the {idle} days since {since}: the planned sample is never reached at zero traffic")


CHECKS: tuple[Callable[[ExperimentView], Alarm | None], ...] = (
    srm_mismatch, baseline_drift, outcome_imbalance, contract_violations, other_invalid, guardrail_breached, stalled,
)
"""One function per alarm, in the order of :data:`SEVERITY`."""


def alarms(view: ExperimentView) -> list[Alarm]:
    """Every alarm of the experiment's latest look, most severe first (:data:`SEVERITY`). A check that cannot
    read the look (a column missing from an older table) is itself reported, as ``not_checked``, and never
    stops the report of this experiment or of any other."""
    found = []
    for check in CHECKS:
        try:
            alarm = check(view)
        except Exception as exc:  # noqa: BLE001 - one unreadable figure must not stop the night's reports
            alarm = Alarm("not_checked", f"{check.__name__} not checked", f"{type(exc).__name__}: {exc}")
        if alarm is not None:
            found.append(alarm)
    return sorted(found, key=lambda a: SEVERITY.index(a.kind))


def attention(view: ExperimentView) -> str:
    """The experiment's group in :data:`ATTENTION_ORDER`."""
    found = view.alarms  # computed once per view (a cached property of the view)
    if view.decision == Label.INVALID.value or any(a.kind in INVALID_KINDS for a in found):
        return "invalid"
    if found:
        return "alarm"
    if view.decision in DECIDED_ORDER:
        return "decided"
    if view.decision == NOT_COMPUTED:
        return NOT_COMPUTED
    return "continuing"


def attention_rank(view: ExperimentView) -> tuple[int, int]:
    """``(group, rank within the group)``: the group of :func:`attention`, then its most severe alarm
    (:data:`SEVERITY`) or its decision (:data:`DECIDED_ORDER`)."""
    group = attention(view)
    found = view.alarms
    if found:
        within = SEVERITY.index(found[0].kind)
    elif view.decision in DECIDED_ORDER:
        within = DECIDED_ORDER.index(view.decision)
    else:
        within = 0
    return ATTENTION_ORDER.index(group), within
