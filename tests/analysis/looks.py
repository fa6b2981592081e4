"""Build the inputs of one pass of the look from a few hand-written figures, through project code.

Registrations go through ``registration.plan_registrations`` and ``design.comparisons``, the
status stream through ``look.strata`` and ``look.nights``: only the SQL is replaced by the
per-arm cumulative figures a test writes down.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal

import polars as pl
from scipy import stats

from tests.plan_reference import r_reference
from zcl_assets.analysis.design import comparisons
from zcl_assets.analysis.engine import STAT_COLUMNS, LookInputs, analyse
from zcl_assets.analysis.look import nights, strata
from zcl_assets.analysis.registration import RegistrationPolicy, allocation_changes, decode_arms, plan_registrations

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 10, 1, tzinfo=UTC)
DAY0 = T0.date()


def registration(experiment_id, arms, shares=None, control=None, metric="success", **kw) -> dict:
    """A ``select_registrations`` row; ``shares=None`` gives equal shares, ``"unknown"`` none."""
    if shares is None:
        shares = [1 / len(arms)] * len(arms)
    alloc = [None] * len(arms) if shares == "unknown" else shares
    row = {
        "experiment_id": experiment_id, "org_id": "org", "task_type": f"task-{experiment_id}", "kind": "other",
        "hypothesis": "h", "arms": json.dumps([{"name": a, "payload": {}, "allocation": s} for a, s in zip(arms, alloc)]),
        "control_arm": control or arms[0], "primary_metric": metric, "direction": "increase", "mde": 0.05,
        "alpha": 0.05, "power": 0.8, "baseline_mean": 0.5, "baseline_sd": None, "min_samples_per_arm": 100,
        "randomization_unit": "session", "sessions_per_unit": "many", "guardrails": "[]", "metric_caps": None,
        "expected_verified_share": 1.0, "registered_at": T0,
    }
    row.update(kw)
    return row


def binary(experiment_id, arm, day, n, successes, metric="success", segment=0) -> dict:
    """Cumulative statistics of a binary unit-level arm (one observation per unit)."""
    m2 = successes - successes**2 / n if n else 0.0
    return {"experiment_id": experiment_id, "metric": metric, "arm": arm, "segment": segment, "day": day, "n": n,
            "sum_v": float(successes), "m2_v": m2, "variance": None, "successes": float(successes),
            "observations": float(n), "sum_y": float(successes), "sum_m": float(n), "c_yy": m2, "c_mm": 0.0, "c_ym": 0.0}


def continuous(experiment_id, arm, day, n, mean, variance, metric="score", segment=0, exported=False) -> dict:
    """Cumulative statistics of a continuous arm; ``exported`` puts the variance in the export's column."""
    return {"experiment_id": experiment_id, "metric": metric, "arm": arm, "segment": segment, "day": day, "n": n,
            "sum_v": n * mean, "m2_v": None if exported else variance * (n - 1), "variance": variance if exported else None,
            "successes": None, "observations": float(n), "sum_y": None, "sum_m": None, "c_yy": None, "c_mm": None,
            "c_ym": None}


def build(
    registrations: list[dict],
    stats: list[dict],
    as_of: dt.date,
    assigned: list[dict] | None = None,
    events: list[dict] | None = None,
    violations: list[dict] | None = None,
    drift: list[dict] | None = None,
    first_assigned_at: dt.datetime | None = None,
    policy: RegistrationPolicy | None = None,
    output: str = "all",
    both_arms: list[dict] | None = None,
    traffic: pl.DataFrame | None = None,
) -> LookInputs:
    """The inputs of the look as of ``as_of`` (``output``: "all" nights or "last"; ``traffic``: the families'
    history the plans read, :func:`cuped_history`)."""
    reg = pl.DataFrame(registrations, schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                                        "registered_at": pl.Datetime("us", "UTC")})
    ev = pl.DataFrame(events or [], schema={"experiment_id": pl.String, "status": pl.String,
                                            "at": pl.Datetime("us", "UTC"), "reason": pl.String, "allocation": pl.String})
    plans = plan_registrations(reg, None, ev, traffic, policy or RegistrationPolicy())
    arms = decode_arms(reg)
    changes, _ = allocation_changes(ev, arms, reg)
    segments, shares, _, _ = strata(ev, changes, arms)
    comps, experiments, _ = comparisons(reg, plans, pl.DataFrame(schema={"experiment_id": pl.String, "metric": pl.String}),
                                        changes)
    frame = pl.DataFrame(stats, schema={"experiment_id": pl.String, "metric": pl.String, "arm": pl.String,
                                        "segment": pl.Int64, "day": pl.Date, **{c: pl.Float64 for c in STAT_COLUMNS}})
    if assigned is None:  # units assigned = analysed units of the primary metric
        primary = {r["experiment_id"]: r["primary_metric"] for r in registrations}
        assigned = [{"experiment_id": s["experiment_id"], "arm": s["arm"], "segment": s["segment"], "day": s["day"],
                     "units": s["n"]} for s in stats if s["metric"] == primary[s["experiment_id"]]]
    first = pl.DataFrame({"experiment_id": reg.get_column("experiment_id"),
                          "first_assigned_at": [first_assigned_at or T0] * reg.height},
                         schema={"experiment_id": pl.String, "first_assigned_at": pl.Datetime("us", "UTC")})
    looks = nights(reg, ev, first, as_of.isoformat())
    looks = looks.with_columns((pl.lit(True) if output == "all" else pl.col("as_of") == as_of).alias("output"))
    return LookInputs(
        comparisons=comps, looks=looks, arm_stats=frame,
        assigned=pl.DataFrame(assigned, schema={"experiment_id": pl.String, "arm": pl.String, "segment": pl.Int64,
                                                "day": pl.Date, "units": pl.Int64}),
        segments=segments, shares=shares, arms=arms.select("experiment_id", "arm", "arm_order"),
        experiments=experiments,
        violations=pl.DataFrame(violations or [], schema={"experiment_id": pl.String, "epoch": pl.Int64,
                                                          "day": pl.Date, "bad": pl.Int64, "total": pl.Int64}),
        drift=pl.DataFrame(drift or [], schema={"experiment_id": pl.String, "epoch": pl.Int64, "drift_day": pl.Date}),
        both_arms=pl.DataFrame(both_arms or [], schema={"experiment_id": pl.String, "day": pl.Date, "users": pl.Int64}),
    )


def cuped_history(eid: str) -> pl.DataFrame:
    """A family's history as ``sql/measure_family_traffic.sql`` gives it: 100 sessions in 28 days, 80 of
    them of users with a pre-period mean (40 at x = 1 with 35 successes, 40 at x = 0 with 5) and 20 of
    new users (10 successes). Its R^2 is 0.45 and the lower 90% bound a plan counts on 0.348272
    (``tests/analysis/test_registration.py``)."""
    return pl.DataFrame([{"experiment_id": eid, "traffic_per_day": 100 / 28, "verified_share": 1.0, "success_rate": 0.5,
                          "history_users": 0, "cuped_n": 100, "cuped_sv": 50.0, "cuped_svv": 50.0, "cuped_sx": 40.0,
                          "cuped_sxx": 40.0, "cuped_sh": 80.0, "cuped_sxv": 35.0, "cuped_shv": 40.0}])


def look(*args, **kwargs) -> pl.DataFrame:
    """``engine.analyse`` of :func:`build`."""
    return analyse(build(*args, **kwargs))


def row(frame: pl.DataFrame, day: dt.date | None = None, **match) -> dict:
    """The one row of ``frame`` matching ``match`` (at ``day``, default the last night)."""
    day = day or frame.get_column("as_of").max()
    sel = frame.filter(pl.col("as_of") == day)
    for k, v in match.items():
        sel = sel.filter(pl.col(k) == v)
    assert sel.height == 1, (match, sel.height)
    return sel.row(0, named=True)


# References computed from the published formulas, shared by the tests of the look

Z80 = stats.norm.ppf(0.8)
NIGHT = DAY0 + dt.timedelta(days=20)


def cs_reference(diff, v_t, n_t, v_c, n_c, alpha, n_star):
    """Normal-mixture CS half-width and anytime p (Howard et al. 2021 Sec 3.5; Waudby-Smith et al. 2024)."""
    n = n_t + n_c
    sigma2 = n * (v_t / n_t + v_c / n_c)
    tuning = -2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))
    return sigma2, n, tuning / n_star


def halfwidth(sigma2, n, rho2, level):
    return math.sqrt(sigma2 * 2 * (n * rho2 + 1) / (n * n * rho2) * math.log(math.sqrt(n * rho2 + 1) / level))


def anytime_p(diff, sigma2, n, rho2):
    return min(1.0, math.sqrt(n * rho2 + 1) * math.exp(-diff**2 * n * n * rho2 / (2 * sigma2 * (n * rho2 + 1))))


def sig(x, digits=4, signed=False):
    """A figure as the reasons print it (an oracle by ``decimal``, not ``wording.figure``): rounded
    to ``digits`` significant figures, thousands separated, trailing zeros dropped, exponent
    notation below 1e-4 (``9.4e-26``, ``2,475``, ``0.06529``)."""
    value = Decimal(f"{x:.{digits}g}")
    if value != 0 and abs(value) < Decimal("1e-4"):
        mantissa, exponent = f"{value:e}".split("e")
        text = f"{mantissa.rstrip('0').rstrip('.') if '.' in mantissa else mantissa}e{int(exponent)}"
    else:
        text = f"{value:,f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
    return ("+" if signed and value > 0 else "") + text


def binary_cs(x_t, n_t, x_c, n_c, level=0.0125, alpha=0.0125, mde=0.05, baseline=0.5, power=0.8):
    """CS ends and anytime p of a 50/50 binary comparison, tuned at its plan (hand formulas above)."""
    n_fixed = (stats.norm.isf(alpha / 2) + stats.norm.ppf(power)) ** 2 * (baseline * (1 - baseline) + (baseline + mde) * (1 - baseline - mde)) \
        / mde**2
    plan = math.ceil(r_reference(alpha, power) * n_fixed)
    p_t, p_c = x_t / n_t, x_c / n_c
    sigma2, n, rho2 = cs_reference(p_t - p_c, p_t * (1 - p_t), n_t, p_c * (1 - p_c), n_c, alpha, 2 * plan)
    hw = halfwidth(sigma2, n, rho2, level)
    return p_t - p_c - hw, p_t - p_c + hw, anytime_p(p_t - p_c, sigma2, n, rho2), plan

