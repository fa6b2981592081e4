"""Many experiments at once, simulated as nightly sufficient statistics (no sessions).

For the error-rate simulations of the decision rule and for the speed benchmark of the
look: families of concurrent experiments (an organization and task type, ``K`` at a time),
each with one to four treatment arms, registered through the production registration path
(``registration.plan_registrations``, ``design.comparisons``), with cumulative binary
figures per arm and night. The output is an ``engine.LookInputs``, so the decisions come
from exactly the code the nightly run uses.

With a world of returning users (``FamilyDesign.returning``, ``simulation.returning``), every
unit is drawn with its pre-experiment covariate, the arms carry the CUPED sums the look reads
(``engine.COVARIATE_COLUMNS``), and each family's registrations are planned against a history
drawn from the same world (the ``cuped_*`` sums of ``sql/measure_family_traffic.sql``), so the
plan's variance reduction is measured as a registration measures it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import numpy as np
import polars as pl

from zcl_assets.analysis.design import comparisons
from zcl_assets.analysis.engine import COVARIATE_COLUMNS, STAT_COLUMNS, LookInputs
from zcl_assets.analysis.registration import TRAFFIC_DAYS, RegistrationPolicy, decode_arms, plan_registrations
from zcl_assets.simulation.returning import ReturningUsers, arm_night_sums, centered, draw_units, history_sums

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
        returning: a world of returning users with a pre-experiment covariate (None: the units
            have no history, and no covariate sums are written).
        cuped: what the registrations ask for (``cuped``: adjust for the covariate where the
            history supports it).
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
    returning: ReturningUsers | None = None
    cuped: bool = True


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
                "guardrails": "[]", "metric_caps": None, "expected_verified_share": 1.0, "cuped": design.cuped,
                "registered_at": t0 + dt.timedelta(seconds=i),
            })
    return pl.DataFrame(rows, schema_overrides={"baseline_sd": pl.Float64, "metric_caps": pl.String,
                                                "registered_at": pl.Datetime("us", "UTC")})


def _arm_effects(arm_rows: pl.DataFrame, design: FamilyDesign) -> np.ndarray:
    """The true difference of every arm from its control (0 for the control arms)."""
    treated = ~arm_rows.get_column("is_control").to_numpy()
    if design.first_arm_only:
        treated &= arm_rows.get_column("arm").to_numpy() == "t1"
    return np.where(treated, design.effect, 0.0)


def _unit_sums(rng: np.random.Generator, new: np.ndarray, effect: np.ndarray, design: FamilyDesign) -> dict:
    """Cumulative sufficient statistics ``[arm, night]`` of units drawn one by one from the world
    of returning users, with their covariate sums (``simulation.returning.centered``)."""
    arms, nights = new.shape
    raw = []
    for night in range(nights):
        arm = np.repeat(np.arange(arms), new[:, night])
        raw.append(arm_night_sums(draw_units(rng, design.returning, design.baseline, effect[arm]), arm, arms))
    return centered({k: np.cumsum(np.stack([r[k] for r in raw], axis=1), axis=1) for k in raw[0]})


def _binomial_sums(rng: np.random.Generator, new: np.ndarray, effect: np.ndarray, design: FamilyDesign) -> dict:
    """Cumulative binary sufficient statistics ``[arm, night]`` of units without history."""
    succ = rng.binomial(new, (design.baseline + effect)[:, None])
    n, s = new.cumsum(axis=1).astype(float), succ.cumsum(axis=1).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        m2 = np.where(n > 0, s - s**2 / np.where(n > 0, n, 1), 0.0)
    zero = np.zeros_like(n)
    return {"n": n, "sum_v": s, "m2_v": m2, "successes": s, "observations": n, "sum_y": s, "sum_m": n, "c_yy": m2,
            "c_mm": zero, "c_ym": zero}


def _nightly_figures(rng: np.random.Generator, arm_rows: pl.DataFrame, design: FamilyDesign) -> pl.DataFrame:
    """Cumulative binary figures of every arm at every night (``LookInputs.arm_stats`` columns,
    with the covariate's where the world has returning users), vectorised."""
    nights = design.nights
    new = rng.poisson(design.units_per_arm_night, size=(arm_rows.height, nights))
    effect = _arm_effects(arm_rows, design)
    sums = (_binomial_sums if design.returning is None else _unit_sums)(rng, new, effect, design)
    days = pl.Series([START + dt.timedelta(days=d) for d in range(nights)], dtype=pl.Date)
    idx = np.repeat(np.arange(arm_rows.height), nights)
    return pl.DataFrame({
        "experiment_id": arm_rows.get_column("experiment_id").gather(idx),
        "metric": "success", "arm": arm_rows.get_column("arm").gather(idx), "segment": 0,
        "day": days.gather(np.tile(np.arange(nights), arm_rows.height)), "variance": None,
        **{k: v.ravel() for k, v in sums.items()},
    }, schema_overrides={"segment": pl.Int64, "variance": pl.Float64})


def _family_history(rng: np.random.Generator, reg: pl.DataFrame, design: FamilyDesign) -> pl.DataFrame | None:
    """Per registration, what ``sql/measure_family_traffic.sql`` would measure of its family's 28
    days before: the traffic, and the ``cuped_*`` sums of a history drawn from the world (one per
    family, shared by its experiments); None without returning users."""
    if design.returning is None:
        return None
    arms = decode_arms(reg).join(reg.select("experiment_id", "org_id"), on="experiment_id")
    traffic = arms.group_by("org_id", maintain_order=True).agg((pl.len() * design.units_per_arm_night).alias("traffic_per_day"))
    rows = []
    for org, per_day in traffic.iter_rows():
        units = design.returning.history_units or int(round(per_day * TRAFFIC_DAYS))
        rows.append({"org_id": org, "traffic_per_day": per_day, "verified_share": 1.0, "success_rate": design.baseline,
                     "history_users": 0, **history_sums(rng, design.returning, design.baseline, units)})
    return reg.select("experiment_id", "org_id").join(pl.DataFrame(rows), on="org_id").drop("org_id")


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
    plans = plan_registrations(reg, traffic=_family_history(rng, reg, design), policy=policy or RegistrationPolicy())
    empty = pl.DataFrame(schema={"experiment_id": pl.String, "at": pl.Datetime("us", "UTC"), "arm": pl.String,
                                 "share": pl.Float64})
    comps, experiments, _ = comparisons(reg, plans, pl.DataFrame(schema={"experiment_id": pl.String,
                                                                        "metric": pl.String}), empty)
    arm_rows = decode_arms(reg)
    stats = _nightly_figures(rng, arm_rows, design)
    if design.returning is not None:  # as the look's SQL: covariates only where the plan applies CUPED
        adjusted = pl.col("experiment_id").is_in(plans.filter("cuped").get_column("experiment_id").implode())
        stats = stats.with_columns(pl.when(adjusted).then(pl.col(c)).otherwise(0.0).alias(c) for c in COVARIATE_COLUMNS)
    days = pl.Series([START + dt.timedelta(days=d) for d in range(design.nights)], dtype=pl.Date)
    looks = pl.DataFrame({"experiment_id": reg.get_column("experiment_id")}).join(pl.DataFrame({"as_of": days}),
                                                                                  how="cross").with_columns(
        ((pl.col("as_of") - pl.lit(START)).dt.total_days() + 1.0).alias("days_since_first_assignment"),
        pl.lit("active").alias("status"), pl.lit(0, dtype=pl.Int64).alias("epoch"), pl.lit(START).alias("epoch_start"),
        pl.col("as_of").alias("last_unit_day"),  # units come every night (Poisson means in the tens)
        pl.lit(True).alias("output"))
    inputs = LookInputs(
        comparisons=comps, looks=looks,
        arm_stats=stats.select("experiment_id", "metric", "arm", "segment", "day", *STAT_COLUMNS,
                               *(c for c in COVARIATE_COLUMNS if c in stats.columns)),
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
