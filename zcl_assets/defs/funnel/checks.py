"""Funnel checks. Conservation of lifecycle events is blocking (a failure is a bug); the budget
checks are warnings: they report what the events imply, violations included, and never stop a run.

Each is evaluated by its asset's own step (``check_specs`` of ``funnel`` and
``exploration_share``), on the asset's connection, so a night pays no Dagster step for it.
"""

import dagster as dg
import duckdb

from sql import load_sql

ADMISSION_STATES = dg.AssetKey("admission_states")
EXAMPLES = 20


def _examples(rows: list[tuple]) -> dg.MetadataValue:
    return dg.MetadataValue.json([[str(v) for v in r] for r in rows[:EXAMPLES]])


def _spec(name: str, description: str, asset: dg.AssetKey = ADMISSION_STATES, blocking: bool = False) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(name, asset=asset, blocking=blocking, description=description)


ADMISSION_CHECKS: tuple[dg.AssetCheckSpec, ...] = (
    _spec("admission_event_conservation", "Every staged lifecycle event is replayed into admission_states or "
          "quarantined (stage funnel).", blocking=True),
    _spec("launch_cap", "Launches per organization and UTC day stay within the launch cap, charged at the `launched` "
          "transition: admissions that never launch use no slot; of launches racing for the last slot, the first in "
          "the ledger takes it."),
    _spec("attempt_cap", "Admissions (attempts) per organization and UTC day stay within the attempt cap, charged at "
          "`admitted`; also states whether the organization's days could hold its admissions at that cap."),
    _spec("arm_diversity", "Arm diversity: no arm is attempted twice on a UTC day before every eligible arm was "
          "attempted once."),
    _spec("stalled_admissions", "No admission stalls: admitted or consumed, never launched within the configured "
          "stall time."),
)
"""The checks of ``admission_states``, in the order :func:`admission_results` returns them."""

EXPLORATION_RATE = _spec(
    "exploration_rate", "The share of sessions that explored lies in the configured range (95% Wilson interval not "
    "entirely above the cap nor below the base rate).", asset=dg.AssetKey("exploration_share"))


def admission_results(con: duckdb.DuckDBPyConnection) -> list[dg.AssetCheckResult]:
    """The results of :data:`ADMISSION_CHECKS` on the tables the funnel just built."""
    return [admission_event_conservation(con), launch_cap(con), attempt_cap(con), arm_diversity(con),
            stalled_admissions(con)]


_BLOCKING = {spec.name for spec in ADMISSION_CHECKS if spec.blocking}


def _result(name: str, passed: bool, asset: dg.AssetKey = ADMISSION_STATES, **fields) -> dg.AssetCheckResult:
    """A failing blocking check is an error (it stops what depends on its asset); the others warn."""
    severity = dg.AssetCheckSeverity.ERROR if name in _BLOCKING else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(asset_key=asset, check_name=name, passed=passed, severity=severity, **fields)


def admission_event_conservation(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    staged, valid, quarantined = con.execute(load_sql("funnel/count_admission_conservation")).fetchone()
    return _result("admission_event_conservation", staged == valid + quarantined, metadata={
        "staged_events": int(staged), "valid_events": int(valid), "quarantined_events": int(quarantined)})


def launch_cap(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    rows = con.execute(load_sql("funnel/find_launches_over_cap")).fetchall()
    days = sorted({(r[0], str(r[1])) for r in rows})
    return _result(
        "launch_cap", not rows,
        description=f"{len(rows)} launches over the cap on {len(days)} organization-days" if rows else "every launch within its cap",
        metadata={
            "launches_over_cap": len(rows),
            "days_over_cap": len(days),
            "examples": _examples(rows),  # org, day, slot, cap, admission, arm, launched_at
        },
    )


def attempt_cap(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    days = con.execute(load_sql("funnel/find_attempt_days_over_cap")).fetchall()
    capacity = con.execute(load_sql("funnel/summarize_attempt_capacity")).fetchall()
    short = [c for c in capacity if c[6] is not None and c[1] > c[6]]
    text = "; ".join(
        f"{org}: {n} admissions in {d} days ({first}..{last}) at {cap} a day need at least {need} days, not {d}"
        for org, n, first, last, d, cap, _cap_total, need in short
    )
    return _result(
        "attempt_cap", not days,
        description=text or (f"{len(days)} days over the attempt cap" if days else "every day within its attempt cap"),
        metadata={
            "days_over_cap": len(days),
            "admissions_over_cap": sum(len(d[4] or []) for d in days),
            "organizations_over_capacity": dg.MetadataValue.json([[str(v) for v in c] for c in short]),
            "examples": _examples(days),  # org, day, attempts, cap, admissions beyond the cap
        },
    )


def arm_diversity(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    rows = con.execute("SELECT * FROM arm_repeats ORDER BY org_id, day, attempt_slot").fetchall()
    # org, day, slot, admission, arm, untried arms
    return _result("arm_diversity", not rows, metadata={"repeats": len(rows), "examples": _examples(rows)})


def stalled_admissions(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    rows = con.execute(load_sql("funnel/find_stalled_admissions")).fetchall()
    return _result("stalled_admissions", not rows, metadata={
        "stalled": len(rows),
        "stalled_consumed": sum(1 for r in rows if r[3] == "consumed"),
        "examples": _examples(rows),  # org, admission, arm, state, since, hours
    })


def exploration_rate(con: duckdb.DuckDBPyConnection) -> dg.AssetCheckResult:
    rows = con.execute(
        "SELECT org_id, task_type, explored, sessions, share, ci_low, ci_high, rate_low, rate_high, status "
        "FROM exploration_share WHERE status IN ('above_cap', 'below_base') ORDER BY org_id, task_type"
    ).fetchall()
    return _result("exploration_rate", not rows, asset=EXPLORATION_RATE.asset_key,
                   metadata={"outside_range": len(rows), "examples": _examples(rows)})
