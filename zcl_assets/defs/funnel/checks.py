"""Funnel checks. Conservation of lifecycle events is blocking (a failure is a bug); the budget
checks are warnings: they report what the events imply, violations included, and never stop a run."""

import dagster as dg

from resources import Warehouse
from sql import load_sql

ADMISSION_STATES = dg.AssetKey("admission_states")
EXAMPLES = 20


def _examples(rows: list[tuple]) -> dg.MetadataValue:
    return dg.MetadataValue.json([[str(v) for v in r] for r in rows[:EXAMPLES]])


@dg.asset_check(
    asset=ADMISSION_STATES,
    blocking=True,
    description="Every staged lifecycle event is replayed into admission_states or quarantined (stage funnel).",
)
def admission_event_conservation(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        staged, valid, quarantined = con.execute(load_sql("funnel/count_admission_conservation")).fetchone()
    return dg.AssetCheckResult(
        passed=staged == valid + quarantined,
        metadata={"staged_events": int(staged), "valid_events": int(valid), "quarantined_events": int(quarantined)},
    )


@dg.asset_check(
    asset=ADMISSION_STATES,
    description="Launches per organization and UTC day stay within the launch cap, charged at the `launched` "
    "transition: admissions that never launch use no slot; of launches racing for the last slot, the first in "
    "the ledger takes it.",
)
def launch_cap(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.execute(load_sql("funnel/find_launches_over_cap")).fetchall()
    days = sorted({(r[0], str(r[1])) for r in rows})
    return dg.AssetCheckResult(
        passed=not rows,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"{len(rows)} launches over the cap on {len(days)} organization-days" if rows else "every launch within its cap",
        metadata={
            "launches_over_cap": len(rows),
            "days_over_cap": len(days),
            "examples": _examples(rows),  # org, day, slot, cap, admission, arm, launched_at
        },
    )


@dg.asset_check(
    asset=ADMISSION_STATES,
    description="Admissions (attempts) per organization and UTC day stay within the attempt cap, charged at "
    "`admitted`; also states whether the organization's days could hold its admissions at that cap.",
)
def attempt_cap(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        days = con.execute(load_sql("funnel/find_attempt_days_over_cap")).fetchall()
        capacity = con.execute(load_sql("funnel/summarize_attempt_capacity")).fetchall()
    short = [c for c in capacity if c[6] is not None and c[1] > c[6]]
    text = "; ".join(
        f"{org}: {n} admissions in {d} days ({first}..{last}) at {cap} a day need at least {need} days, not {d}"
        for org, n, first, last, d, cap, _cap_total, need in short
    )
    return dg.AssetCheckResult(
        passed=not days,
        severity=dg.AssetCheckSeverity.WARN,
        description=text or (f"{len(days)} days over the attempt cap" if days else "every day within its attempt cap"),
        metadata={
            "days_over_cap": len(days),
            "admissions_over_cap": sum(len(d[4] or []) for d in days),
            "organizations_over_capacity": dg.MetadataValue.json([[str(v) for v in c] for c in short]),
            "examples": _examples(days),  # org, day, attempts, cap, admissions beyond the cap
        },
    )


@dg.asset_check(
    asset=ADMISSION_STATES,
    description="Arm diversity: no arm is attempted twice on a UTC day before every eligible arm was attempted once.",
)
def arm_diversity(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.execute("SELECT * FROM arm_repeats ORDER BY org_id, day, attempt_slot").fetchall()
    return dg.AssetCheckResult(
        passed=not rows,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"repeats": len(rows), "examples": _examples(rows)},  # org, day, slot, admission, arm, untried arms
    )


@dg.asset_check(
    asset=ADMISSION_STATES,
    description="No admission stalls: admitted or consumed, never launched within the configured stall time.",
)
def stalled_admissions(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.execute(load_sql("funnel/find_stalled_admissions")).fetchall()
    return dg.AssetCheckResult(
        passed=not rows,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "stalled": len(rows),
            "stalled_consumed": sum(1 for r in rows if r[3] == "consumed"),
            "examples": _examples(rows),  # org, admission, arm, state, since, hours
        },
    )


@dg.asset_check(
    asset=dg.AssetKey("exploration_share"),
    description="The share of sessions that explored lies in the configured range (95% Wilson interval not "
    "entirely above the cap nor below the base rate).",
)
def exploration_rate(warehouse: Warehouse) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT org_id, task_type, explored, sessions, share, ci_low, ci_high, rate_low, rate_high, status "
            "FROM exploration_share WHERE status IN ('above_cap', 'below_base') ORDER BY org_id, task_type"
        ).fetchall()
    return dg.AssetCheckResult(
        passed=not rows,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"outside_range": len(rows), "examples": _examples(rows)},
    )
