"""Many experiments at once, simulated as nightly sufficient statistics (no sessions).

For the error-rate simulations of the decision rule and for the speed benchmark of the
look: families of concurrent experiments (an organization and task type, ``K`` at a time),
each with one to four treatment arms, registered through the production registration path
(``registration.plan_registrations``, ``design.comparisons``), with cumulative binary
figures per arm and night. The output is an ``engine.LookInputs``, so the decisions come
from exactly the code the nightly run uses.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import numpy as np
import polars as pl

from zcl_assets.analysis.design import comparisons
from zcl_assets.analysis.engine import STAT_COLUMNS, LookInputs
from zcl_assets.analysis.registration import RegistrationPolicy, decode_arms, plan_registrations

UTC = dt.timezone.utc
START = dt.date(2026, 10, 1)


@dataclass(frozen=True)
class FamilyDesign:
    """The experiments of every family.

    Attributes:
        per_family: concurrent experiments in each (at most K get slots; the rest are refused).
        arms: treatment-arm counts, assigned to the experiments in turn.
        nights: nightly looks (every one written).
        units_per_arm_night: Poisson mean of new units per arm and night.
        baseline: control success rate.
        effect: true difference of every treatment arm (0: A/A), or of the first (``t1``) alone
            when ``first_arm_only``.
        first_arm_only: only ``t1`` carries the effect (the least favourable case for Holm).
        mde: registered MDE.
        alpha: registered alpha (each experiment gets alpha / K).
    """

    per_family: int = 4
    arms: tuple[int, ...] = (1, 2, 3, 4)
    nights: int = 30
    units_per_arm_night: float = 60.0
    baseline: float = 0.3
    effect: float = 0.0
    first_arm_only: bool = False
    mde: float = 0.05
    alpha: float = 0.05


def _registrations(n_families: int, design: FamilyDesign) -> pl.DataFrame:
    """``select_registrations`` rows of every family (a few thousand rows), registered in turn."""
    t0 = dt.datetime(START.year, START.month, START.day, tzinfo=UTC)
    rows = []
    for f in range(n_families):
        for i in range(design.per_family):
            k = design.arms[(f * design.per_family + i) % len(design.arms)]
            names = ["control"] + [f"t{j}" for j in range(1, k + 1)]
            rows.append({
                "experiment_id": f"f{f:05d}-e{i}", "org_id": f"org{f:05d}", "task_type": "task", "kind": "other",
                "hypothesis": "simulated", "arms": json.dumps([{"name": a, "payload": {}, "allocation": 1 / len(names)}
                                                               for a in names]),
                "control_arm": "control", "primary_metric": "success", "direction": "increase", "mde": design.mde,
                "alpha": design.alpha, "power": 0.8, "baseline_mean": design.baseline, "baseline_sd": None,
                "min_samples_per_arm": 50, "randomization_unit": "session", "sessions_per_unit": "many",
                "guardrails": "[]", "metric_caps": None, "expected_verified_share": 1.0,
                "registered_at": t0 + dt.timedelta(seconds=i),
            })
    return pl.DataFrame(rows, schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                                "registered_at": pl.Datetime("us", "UTC")})


def _nightly_figures(rng: np.random.Generator, arm_rows: pl.DataFrame, design: FamilyDesign) -> pl.DataFrame:
    """Cumulative binary figures of every arm at every night (``LookInputs.arm_stats`` columns), vectorised."""
    nights = design.nights
    new = rng.poisson(design.units_per_arm_night, size=(arm_rows.height, nights))
    treated = ~arm_rows.get_column("is_control").to_numpy()
    if design.first_arm_only:
        treated &= arm_rows.get_column("arm").to_numpy() == "t1"
    p = np.where(treated, design.baseline + design.effect, design.baseline)[:, None]
    succ = rng.binomial(new, p)
    n, s = new.cumsum(axis=1), succ.cumsum(axis=1)
    days = pl.Series([START + dt.timedelta(days=d) for d in range(nights)], dtype=pl.Date)
    idx = np.repeat(np.arange(arm_rows.height), nights)
    nn, ss = n.ravel().astype(float), s.ravel().astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        m2 = np.where(nn > 0, ss - ss**2 / np.where(nn > 0, nn, 1), 0.0)
    return pl.DataFrame({
        "experiment_id": arm_rows.get_column("experiment_id").gather(idx),
        "metric": "success", "arm": arm_rows.get_column("arm").gather(idx), "segment": 0,
        "day": days.gather(np.tile(np.arange(nights), arm_rows.height)),
        "n": nn, "sum_v": ss, "m2_v": m2, "variance": None, "successes": ss, "observations": nn,
        "sum_y": ss, "sum_m": nn, "c_yy": m2, "c_mm": 0.0, "c_ym": 0.0,
    }, schema_overrides={"segment": pl.Int64, "variance": pl.Float64, "c_mm": pl.Float64, "c_ym": pl.Float64})


def simulate_families(n_families: int, design: FamilyDesign | None = None, seed: int = 1,
                      policy: RegistrationPolicy | None = None) -> tuple[LookInputs, pl.DataFrame]:
    """Binary A/B/n experiments with a common true effect, looked at every night.

    Args:
        n_families: organizations and task types.
        design: the experiments of every family (default :class:`FamilyDesign`).
        seed: NumPy seed.
        policy: K (default: the registration default).

    Returns:
        ``(inputs, registrations)``.
    """
    design = design or FamilyDesign()
    rng = np.random.default_rng(seed)
    reg = _registrations(n_families, design)
    plans = plan_registrations(reg, policy=policy or RegistrationPolicy())
    empty = pl.DataFrame(schema={"experiment_id": pl.String, "at": pl.Datetime("us", "UTC"), "arm": pl.String,
                                 "share": pl.Float64})
    comps, experiments, _ = comparisons(reg, plans, pl.DataFrame(schema={"experiment_id": pl.String,
                                                                        "metric": pl.String}), empty)
    arm_rows = decode_arms(reg)
    stats = _nightly_figures(rng, arm_rows, design)
    days = pl.Series([START + dt.timedelta(days=d) for d in range(design.nights)], dtype=pl.Date)
    looks = pl.DataFrame({"experiment_id": reg.get_column("experiment_id")}).join(pl.DataFrame({"as_of": days}),
                                                                                  how="cross").with_columns(
        ((pl.col("as_of") - pl.lit(START)).dt.total_days() + 1.0).alias("days_since_first_assignment"),
        pl.lit("active").alias("status"), pl.lit(0, dtype=pl.Int64).alias("epoch"), pl.lit(START).alias("epoch_start"),
        pl.col("as_of").alias("last_unit_day"),  # units come every night (Poisson means in the tens)
        pl.lit(True).alias("output"))
    inputs = LookInputs(
        comparisons=comps, looks=looks,
        arm_stats=stats.select("experiment_id", "metric", "arm", "segment", "day", *STAT_COLUMNS),
        assigned=stats.select("experiment_id", "arm", "segment", "day", pl.col("n").cast(pl.Int64).alias("units")),
        segments=experiments.select("experiment_id", pl.lit(0, dtype=pl.Int64).alias("segment"),
                                    pl.lit(0, dtype=pl.Int64).alias("epoch")),
        shares=arm_rows.select("experiment_id", pl.lit(0, dtype=pl.Int64).alias("segment"), "arm", "share"),
        arms=arm_rows.select("experiment_id", "arm", "arm_order"),
        experiments=experiments,
        violations=pl.DataFrame(schema={"experiment_id": pl.String, "epoch": pl.Int64, "day": pl.Date,
                                        "bad": pl.Int64, "total": pl.Int64}),
        drift=pl.DataFrame(schema={"experiment_id": pl.String, "epoch": pl.Int64, "drift_day": pl.Date}),
        both_arms=pl.DataFrame(schema={"experiment_id": pl.String, "day": pl.Date, "users": pl.Int64}),
    )
    return inputs, reg


def family_error_rates(look: pl.DataFrame) -> dict[str, float]:
    """Shares of families and of experiments (by treatment arms) that ever reached adopt or reject.

    Args:
        look: ``engine.analyse`` output over every night.

    Returns:
        ``{"families": rate, "families_n": n, "experiments": rate, "arms_<k>": rate per k, ...}``.
    """
    primary = look.filter(pl.col("is_primary")).with_columns(
        pl.col("decision").is_in(["adopt", "reject"]).alias("decided"),
        pl.col("family_size").max().over("experiment_id").alias("k"),
    )
    per_exp = primary.group_by("experiment_id", "org_id", "k").agg(pl.col("decided").any())
    per_family = per_exp.group_by("org_id").agg(pl.col("decided").any())
    out = {"families": float(per_family.get_column("decided").mean()), "families_n": per_family.height,
           "experiments": float(per_exp.get_column("decided").mean()), "experiments_n": per_exp.height}
    for k, rate, n in per_exp.group_by("k").agg(pl.col("decided").mean(), pl.len()).sort("k").iter_rows():
        out[f"arms_{k}"] = float(rate)
        out[f"arms_{k}_n"] = n
    return out
