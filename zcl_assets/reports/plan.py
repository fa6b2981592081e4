"""The words of ``zcl plan``: what an experiment would cost, before it is registered."""

from __future__ import annotations

from zcl_assets.reports.formatting import count, number


def plan_text(figures: dict) -> str:
    """The planner's answer (:func:`zcl_assets.analysis.planner.answer`) as a person reads it."""
    unit = figures["planned_unit"]
    arms = figures["treatment_arms"]
    lines = [
        f"plan for {figures['org_id']} / {figures['task_type']}: {figures['metric']}, "
        f"{figures['randomization_unit']}-randomized, {arms} treatment arm{'s' if arms != 1 else ''} against control "
        f"(as of {figures['as_of'][:10]})",
        f"estimand: {figures['estimand']}",
    ]
    if figures["admitted"]:
        lines.append(f"alpha slot {figures['alpha_slot']} of {figures['alpha_slots']} free: alpha share "
                     f"{number(figures['alpha_share'])}, {number(figures['comparison_alpha'])} per comparison (Holm over "
                     f"the arms), power {number(figures['power'])}")
    else:
        free = figures["next_free_slot"]
        lines.append(f"no alpha slot free: all {figures['alpha_slots']} are held by live experiments of the family; "
                     + (f"the first should reach its plan, and free its slot, about {free}" if free
                        else "none of them has a known end (no traffic, an unreachable plan, or one "
                             "that ends after 9999)"))
    if figures["planned_n_per_arm"] is None:
        lines.append(f"planned sample: unreachable ({figures['plan_reason']})")
    else:
        reduction = figures["cuped_planned_r2"] or 0.0
        cuped = f" x (1 - {number(reduction, 4)}) for CUPED" if reduction > 0 else ""
        lines.append(f"planned sample: {count(figures['planned_n_per_arm'])} {unit} per arm (fixed-horizon "
                     f"{count(figures['n_fixed_per_arm'])} x R {number(figures['inflation'])}{cuped} / verified share "
                     f"{number(figures['verified_share'])}); per arm {_units(figures['planned_units'])}")
        lines.append(f"R {number(figures['inflation'])}: what the confidence sequence, read every night, needs beyond a "
                     f"single fixed-horizon test to keep power {number(figures['power'])} at the plan, calibrated at "
                     f"{number(figures['comparison_alpha'])} (docs/statistics.md, section 4)")
    if figures["variance_basis"]:
        lines.append(f"variance: {figures['variance_basis']}")
    lines.append(f"variance reduction: {figures['cuped_basis']}")
    traffic = figures["traffic_per_day"]
    if not traffic:
        lines.append(f"traffic: no {unit} of this family in the 28 days before; days to the plan unknown")
    else:
        sharing = figures["experiments_sharing_traffic"]
        left = figures["days_to_plan"]
        lines.append(f"traffic: {number(traffic)} {unit} a day over the 28 days before, shared by {sharing} live "
                     f"experiment{'s' if sharing != 1 else ''} (this one included)"
                     + (f"; days to the plan: {left:.0f}" if left is not None and left != float("inf") else ""))
    if figures["days"] is not None:
        mde = figures["mde_within_days"]
        lines.append(f"within {number(figures['days'])} days: " + (
            f"the smallest MDE whose plan is reached is {number(mde, 4)}" if mde is not None
            else "no MDE the metric allows is reached at this traffic"))
    return "\n".join(lines)


def _units(units: dict) -> str:
    return ", ".join(f"{arm} {count(n)}" for arm, n in units.items())
