"""How long one look takes over 10,000 experiments x 30 nights of sufficient statistics.

Builds the frames of ``engine.LookInputs`` directly (the SQL has already reduced the data
to cumulative sufficient statistics per experiment, arm and night), then times
``engine.analyse``: rule 1 along the whole path, every comparison at every night with its
decision, Holm step, confidence sequence, descriptive test and progress figures. Two
mixes: every experiment binary with two arms (the worst case for the score interval), and
a realistic mix (60% binary, 30% continuous, 10% user-randomized with the ratio of sums
beside the per-user mean; one to four treatment arms; a guardrail on a fifth).

Two workloads per mix: tonight's look (rule 1 evaluated along all 30 nights, the comparisons
and decisions of the last night), and every night's look (every comparison at every night,
which is what a run writes, since every night is recomputed from the staged data).

Run: ``python benchmarks/look_speed.py [experiments] [nights]``; prints seconds (median and
minimum of 5 runs after a warm-up) and the load average, since the machine is shared.
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zcl_assets.analysis.engine import STAT_COLUMNS, LookInputs, analyse  # noqa: E402


def build(n_exp: int, n_nights: int, mix: str, seed: int = 1) -> LookInputs:
    """Synthetic cumulative sufficient statistics with the shapes the SQL produces."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"exp-{i:05d}" for i in range(n_exp)])
    if mix == "binary":
        kind = np.zeros(n_exp, dtype=int)
        arms = np.full(n_exp, 1)
    else:
        kind = rng.choice(3, n_exp, p=[0.6, 0.3, 0.1])
        arms = rng.choice([1, 2, 3, 4], n_exp, p=[0.6, 0.2, 0.1, 0.1])
    guard = (rng.random(n_exp) < 0.2) & (mix != "binary")
    metric = np.where(kind == 0, "success", np.where(kind == 1, "time_minutes", "score"))
    unit = np.where(kind == 2, "user", "session")
    start = dt.date(2026, 10, 1)
    # comparisons (the design)
    rows = []
    for e in range(n_exp):  # building the input only; the timed look has no such loop
        for a in range(1, arms[e] + 1):
            base = dict(experiment_id=ids[e], org_id=f"org-{e % 50}", task_type=f"task-{e % 7}", source="sessions",
                        control_arm="control", treatment_arm=f"t{a}", alpha_share=0.0125,
                        comparison_alpha=0.0125 / arms[e], ratio=1.0, planned_n_per_arm=3000.0,
                        planned_n_treatment=3000.0, n_fixed_per_arm=1500.0, plan_reachable=True, plan_reason=None,
                        tuning_n_total=6000.0, min_samples_per_arm=100.0, inflation=1.73,
                        expected_verified_share=0.9, registration_refused=False, allocation="declared",
                        analysis_unit=unit[e])
            if kind[e] == 0:
                rows.append(base | dict(metric="success", metric_kind="binary_proportion", role="primary",
                                        direction="increase", sign=1.0, mde=0.05, mde_signed=0.05, baseline_mean=0.4,
                                        unit_sd=None, margin=None, guardrail_order=-1, counts_successes=True))
            else:
                m = metric[e]
                rows.append(base | dict(metric=m, metric_kind="continuous_mean", role="primary",
                                        direction="decrease" if m == "time_minutes" else "increase",
                                        sign=-1.0 if m == "time_minutes" else 1.0, mde=2.0, mde_signed=2.0,
                                        baseline_mean=30.0, unit_sd=10.0, margin=None, guardrail_order=-1,
                                        counts_successes=False))
                if kind[e] == 2:
                    rows.append(rows[-1] | dict(metric_kind="ratio_of_sums", role="secondary"))
            if guard[e]:
                rows.append(rows[-1] | dict(metric="tokens", metric_kind="continuous_mean", role="guardrail",
                                            direction="decrease", sign=-1.0, margin=2000.0, guardrail_order=0,
                                            counts_successes=False))
    comps = pl.DataFrame(rows).with_columns(
        pl.col("unit_sd").cast(pl.Float64), pl.col("margin").cast(pl.Float64), pl.col("plan_reason").cast(pl.String))
    comps = comps.with_columns(
        (pl.col("role") == "primary").alias("is_primary"),
        pl.lit("difference").alias("estimand"),
        pl.int_range(pl.len()).alias("cid"),
    )
    # cumulative statistics per experiment, metric, arm and night (dense: every night changes)
    pairs = comps.select("experiment_id", "metric", "treatment_arm").unique()
    arm_rows = pl.concat([pairs.select("experiment_id", "metric", pl.col("treatment_arm").alias("arm")),
                          pairs.select("experiment_id", "metric", pl.lit("control").alias("arm")).unique()])
    nights = pl.DataFrame({"day": [start + dt.timedelta(days=d) for d in range(n_nights)]})
    grid = arm_rows.join(nights, how="cross").sort("experiment_id", "metric", "arm", "day")
    n_rows = grid.height
    step = rng.poisson(120, n_rows).astype(float)
    n = pl.Series(step).cum_sum().to_numpy()
    # restart the cumulative count per arm path
    path = grid.select(pl.struct("experiment_id", "metric", "arm").rank("dense")).to_series().to_numpy()
    first = np.r_[True, path[1:] != path[:-1]]
    offset = np.maximum.accumulate(np.where(first, n - step, 0.0))
    n = n - offset
    binary = grid["metric"].to_numpy() == "success"
    p = np.where(binary, 0.4 + rng.normal(0, 0.01, n_rows), 0.0)
    mean = np.where(binary, p, 30 + rng.normal(0, 0.3, n_rows))
    var = np.where(binary, p * (1 - p), 100.0)
    stats = grid.with_columns(
        pl.lit(0, dtype=pl.Int64).alias("segment"), pl.Series("n", n.astype(np.int64)),
        pl.Series("sum_v", mean * n), pl.Series("m2_v", var * (n - 1)), pl.lit(None, dtype=pl.Float64).alias("variance"),
        pl.Series("successes", np.where(binary, np.round(p * n), np.nan)), pl.Series("observations", n * 1.3),
        pl.Series("sum_y", mean * n * 1.3), pl.Series("sum_m", n * 1.3), pl.Series("c_yy", var * n * 2.0),
        pl.Series("c_mm", n * 0.4), pl.Series("c_ym", n * 1.0),
    )
    looks = pl.DataFrame({"experiment_id": ids}).join(nights.rename({"day": "as_of"}), how="cross").with_columns(
        ((pl.col("as_of") - pl.lit(start)).dt.total_days() + 1.0).alias("days_since_first_assignment"),
        pl.lit("active").alias("status"), pl.lit(0, dtype=pl.Int64).alias("epoch"), pl.lit(True).alias("output"))
    assigned = stats.filter(pl.col("metric") == pl.col("metric").first().over("experiment_id")).select(
        "experiment_id", "arm", "segment", "day", (pl.col("n") * 1.1).cast(pl.Int64).alias("units"))
    arm_names = arm_rows.select("experiment_id", "arm").unique()
    shares = arm_names.with_columns(pl.lit(0, dtype=pl.Int64).alias("segment"),
                                    (1.0 / pl.len().over("experiment_id")).alias("share"))
    experiments = comps.filter("is_primary").group_by("experiment_id").agg(pl.col("metric").first()).select(
        "experiment_id", pl.col("metric").alias("primary_metric"), pl.lit("sessions").alias("source"),
        pl.lit(True).alias("allocation_known"), pl.lit(6000.0).alias("srm_n_star"), pl.lit(True).alias("check_verified"))
    return LookInputs(
        comparisons=comps, looks=looks, arm_stats=stats.select("experiment_id", "metric", "arm", "segment", "day",
                                                              *STAT_COLUMNS),
        assigned=assigned, segments=experiments.select("experiment_id", pl.lit(0, dtype=pl.Int64).alias("segment"),
                                                       pl.lit(0, dtype=pl.Int64).alias("epoch")),
        shares=shares.select("experiment_id", "segment", "arm", "share"),
        arms=arm_names.sort("experiment_id", pl.col("arm") != "control", "arm").with_columns(
            pl.int_range(pl.len()).over("experiment_id").alias("arm_order")),
        experiments=experiments,
        violations=pl.DataFrame(schema={"experiment_id": pl.String, "epoch": pl.Int64, "day": pl.Date,
                                        "bad": pl.Int64, "total": pl.Int64}),
        drift=pl.DataFrame(schema={"experiment_id": pl.String, "epoch": pl.Int64, "drift_day": pl.Date}),
        both_arms=pl.DataFrame(schema={"experiment_id": pl.String, "day": pl.Date, "users": pl.Int64}),
    )


def main(n_exp: int = 10_000, n_nights: int = 30) -> None:
    import os

    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)")
    for mix in ("binary", "mixed"):
        every_night = build(n_exp, n_nights, mix)
        last = every_night.looks.get_column("as_of").max()
        tonight = every_night._replace(looks=every_night.looks.with_columns((pl.col("as_of") == last).alias("output")))
        for label, inputs in (("tonight's look (rule 1 along every night)", tonight),
                              ("every night's look (what a run writes)", every_night)):
            analyse(inputs)  # warm-up
            times = []
            for _ in range(5):
                t = time.perf_counter()
                out = analyse(inputs)
                times.append(time.perf_counter() - t)
            print(f"{mix:6s} {label}: {n_exp:,} experiments x {n_nights} nights, {inputs.comparisons.height:,} "
                  f"comparisons, {out.height:,} rows: {statistics.median(times):.3f} s "
                  f"(median of 5; min {min(times):.3f})")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*args)
