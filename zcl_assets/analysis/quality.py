"""Rule 1 of the decision, for every experiment at every look at once: is the data trustworthy?

* **SRM** on units assigned (Lindon and Malek 2022), every arm of the experiment in one
  test, prior tuned at the planned total sample (``stats.srm.tuned_concentration``), per
  stratum with its declared shares (a declared allocation change starts a stratum; a
  change that was not declared is a mismatch), read at ``stats.srm.SRM_ALPHA``. When no
  allocation was declared, the constancy test (``stats.srm.srm_constancy``) instead.
  Chi-square goodness of fit (or, for an unknown allocation, homogeneity across looks)
  reported beside it.
* **Outcome imbalance**: the same test on units with a verified outcome of the primary
  metric, against the split of the units actually assigned (a verification that depends
  on the arm breaks the comparison; a chance imbalance of the assignment is the SRM test's
  to judge). The verified units are a subsample of the assigned ones, whose split varies
  less than a multinomial draw of their number (hypergeometric variance), so reading them
  against the observed assigned split errs on the conservative side; the tests check the
  false-alarm rate by simulation.
* **Baseline drift**: the control arm's context digest changed.
* **Contract violations**: an anytime-valid test that more than
  ``stats.monitoring.VIOLATION_THRESHOLD`` of the experiment's rows were quarantined.

Every test restarts at a ``reopened`` event (an *epoch*); within an epoch, a look is
invalid from the first look that fired on (sticky). Nothing loops over experiments: the
frames are long (one row per experiment, look, stratum and arm) and reduced in sorted
order with NumPy, so the sums run in a fixed order and a rerun is bit-identical.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import special, stats

from zcl_assets.stats.monitoring import VIOLATION_THRESHOLD, rate_exceeds
from zcl_assets.stats.srm import CONSTANCY_WINDOW, SRM_ALPHA, tuned_concentration

LOOK = ["experiment_id", "as_of"]


def group_sum(keys: np.ndarray, values: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sums of ``values`` over runs of equal ``keys`` (rows already sorted by key).

    Returns the index of each run's first row and one array of sums per value. NumPy's
    ``add.reduceat`` adds in row order, so the result does not depend on threads.
    """
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64), [np.zeros(0) for _ in values]
    start = np.ones(keys.size, dtype=bool)
    start[1:] = keys[1:] != keys[:-1]
    first = np.flatnonzero(start)
    return first, [np.add.reduceat(v, first) for v in values]


def _codes(frame: pl.DataFrame, columns: list[str]) -> np.ndarray:
    """One integer per distinct combination of ``columns`` (frame sorted by them)."""
    return frame.select(pl.struct(columns).rank("dense")).to_series().to_numpy()


def dirichlet_log_bf(counts: pl.DataFrame, count_col: str) -> pl.DataFrame:
    """Log Dirichlet-multinomial Bayes factor per (experiment, look, stratum).

    Args:
        counts: one row per experiment, look, stratum and arm with ``experiment_id, as_of,
            segment, arm, share, concentration`` and the cumulative count ``count_col``.

    Returns:
        ``experiment_id, as_of, segment, log_bf, n, chi_o_e`` where ``chi_o_e`` holds the
        arm-wise observed and expected counts for the chi-square (as two list columns).
    """
    c = counts.sort("experiment_id", "as_of", "segment", "arm")
    x = c.get_column(count_col).cast(pl.Float64).fill_null(0.0).to_numpy()
    theta = c.get_column("share").to_numpy()
    conc = c.get_column("concentration").to_numpy()
    a = conc * theta
    with np.errstate(divide="ignore", invalid="ignore"):
        arm_term = special.gammaln(a + x) - special.gammaln(a) - x * np.log(theta)
    keys = _codes(c, ["experiment_id", "as_of", "segment"])
    first, (term, n) = group_sum(keys, [arm_term, x])
    c0 = conc[first]
    log_bf = term - (special.gammaln(c0 + n) - special.gammaln(c0))
    return c[first].select("experiment_id", "as_of", "segment").with_columns(
        pl.Series("log_bf", log_bf), pl.Series("n", n)
    )


def known_allocation(counts: pl.DataFrame, count_col: str) -> pl.DataFrame:
    """Sequential SRM and chi-square per (experiment, look) for declared allocations.

    Args:
        counts: rows ``experiment_id, as_of, epoch, segment, arm, share, concentration`` and
            ``count_col``, restricted to the strata of each look's epoch.

    Returns:
        ``experiment_id, as_of, p_sequential, p_chisquare``.
    """
    schema = {"experiment_id": pl.String, "as_of": pl.Date, "p_sequential": pl.Float64, "p_chisquare": pl.Float64}
    if counts.height == 0:
        return pl.DataFrame(schema=schema)
    per_stratum = dirichlet_log_bf(counts, count_col)
    per_stratum = per_stratum.join(counts.select("experiment_id", "as_of", "epoch").unique(), on=LOOK)
    s = per_stratum.sort("experiment_id", "as_of", "segment")
    first, (log_bf,) = group_sum(_codes(s, LOOK), [s.get_column("log_bf").to_numpy()])
    looks = s[first].select("experiment_id", "as_of", "epoch").with_columns(pl.Series("log_bf", log_bf))
    looks = looks.with_columns(
        pl.col("log_bf").cum_max().over(["experiment_id", "epoch"], order_by="as_of").alias("running")
    ).with_columns(pl.min_horizontal(pl.lit(1.0), (-pl.col("running")).exp()).alias("p_sequential"))
    # chi-square of the epoch's units against the expected split, strata pooled
    c = counts.with_columns(pl.col(count_col).cast(pl.Float64).fill_null(0.0).alias("x"))
    c = c.with_columns((pl.col("x").sum().over(["experiment_id", "as_of", "segment"]) * pl.col("share")).alias("e"))
    c = c.sort("experiment_id", "as_of", "arm", "segment")
    first, (obs, exp) = group_sum(_codes(c, ["experiment_id", "as_of", "arm"]), [c["x"].to_numpy(), c["e"].to_numpy()])
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(exp > 0, (obs - exp) ** 2 / exp, 0.0)
    arms = c[first].select("experiment_id", "as_of").with_columns(pl.Series("term", term), pl.Series("obs", obs))
    arms = arms.sort("experiment_id", "as_of")
    first, (chi, total, k) = group_sum(_codes(arms, LOOK), [arms["term"].to_numpy(), arms["obs"].to_numpy(),
                                                           np.ones(arms.height)])
    p_chi = np.where(total > 0, stats.chi2.sf(chi, np.maximum(k - 1, 1)), np.nan)
    chi_frame = arms[first].select(LOOK).with_columns(pl.Series("p_chisquare", p_chi))
    return looks.select(LOOK + ["p_sequential"]).join(chi_frame, on=LOOK, how="left").select(list(schema))


def unknown_allocation(counts: pl.DataFrame, count_col: str, window: int = CONSTANCY_WINDOW) -> pl.DataFrame:
    """Constancy test of an undeclared split per (experiment, look), long format.

    The same e-process as ``stats.srm.srm_constancy`` (the tests check they agree), on the
    epoch's cumulative units per arm; the chi-square test of homogeneity of the nightly
    arrivals across looks beside it.

    Returns:
        ``experiment_id, as_of, p_sequential, p_chisquare``.
    """
    schema = {"experiment_id": pl.String, "as_of": pl.Date, "p_sequential": pl.Float64, "p_chisquare": pl.Float64}
    if counts.height == 0:
        return pl.DataFrame(schema=schema)
    arm = ["experiment_id", "epoch", "arm"]
    look = ["experiment_id", "epoch", "as_of"]
    c = (
        counts.group_by("experiment_id", "epoch", "as_of", "arm")
        .agg(pl.col(count_col).cast(pl.Float64).fill_null(0.0).sum().alias("cum"))
        .sort("experiment_id", "epoch", "arm", "as_of")
        .with_columns(pl.col("cum").cum_max().over(arm))  # a decrease counts as no arrival
        .with_columns(
            pl.col("cum").shift(1, fill_value=0.0).over(arm).alias("prev"),
            pl.col("cum").shift(window + 1, fill_value=0.0).over(arm).alias("old"),
            pl.int_range(pl.len()).over(arm).alias("look_index"),
            pl.col("cum").first().over(arm).alias("seed"),
        )
        .with_columns((pl.col("cum") - pl.col("prev")).alias("arrived"), (pl.col("prev") - pl.col("old")).alias("recent"))
        .with_columns(
            pl.col("recent").sum().over(look).alias("recent_total"),
            pl.col("arrived").sum().over(look).alias("look_total"),
            pl.col("arm").count().over(look).alias("k"),
        )
    )
    theta = (c["recent"].to_numpy() + 0.5) / (c["recent_total"].to_numpy() + 0.5 * c["k"].to_numpy())
    arrived = c["arrived"].to_numpy()
    look_total = c["look_total"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        num = np.where(c["look_index"].to_numpy() == 0, 0.0, arrived * np.log(theta))
        sq = np.where(look_total > 0, arrived**2 / look_total, 0.0)
    c = c.with_columns(pl.Series("num", num), pl.Series("sq", sq)).with_columns(
        pl.col("num").cum_sum().over(arm).alias("num_cum"),
        pl.col("sq").cum_sum().over(arm).alias("sq_cum"),
        (pl.col("cum") - pl.col("seed")).alias("rest"),
    )
    c = c.sort("experiment_id", "epoch", "as_of", "arm").with_columns(pl.col("rest").sum().over(look).alias("rest_total"))
    rest, rest_total, cum = c["rest"].to_numpy(), c["rest_total"].to_numpy(), c["cum"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        mle = np.where(rest > 0, rest * np.log(rest / rest_total), 0.0)
        c_over_n = np.where(cum > 0, c["sq_cum"].to_numpy() / cum, 0.0)
    first, (num_sum, mle_sum, total, ratio_sum) = group_sum(
        _codes(c, look), [c["num_cum"].to_numpy(), mle, cum, c_over_n])
    looks = c[first].select("experiment_id", "epoch", "as_of", "k").with_columns(
        pl.Series("log_e", num_sum - mle_sum), pl.Series("total", total), pl.Series("ratio_sum", ratio_sum),
    ).with_columns(
        pl.col("log_e").cum_max().over(["experiment_id", "epoch"]).alias("running"),
        (pl.col("total").diff().over(["experiment_id", "epoch"]).fill_null(pl.col("total")) > 0)
        .cast(pl.Int64).cum_sum().over(["experiment_id", "epoch"]).alias("looks_with_units"),
    )
    chi = looks["total"].to_numpy() * looks["ratio_sum"].to_numpy() - looks["total"].to_numpy()
    df = (looks["k"].to_numpy() - 1) * (looks["looks_with_units"].to_numpy() - 1)
    p_chi = np.where(df > 0, stats.chi2.sf(np.maximum(chi, 0.0), np.maximum(df, 1)), np.nan)
    return looks.with_columns(
        pl.min_horizontal(pl.lit(1.0), (-pl.col("running")).exp()).alias("p_sequential"),
        pl.Series("p_chisquare", p_chi),
    ).select(list(schema))


def rule_one(
    looks: pl.DataFrame,
    assigned: pl.DataFrame,
    verified: pl.DataFrame,
    shares: pl.DataFrame,
    experiments: pl.DataFrame,
    violations: pl.DataFrame,
    drift: pl.DataFrame,
) -> pl.DataFrame:
    """The invalidity signals of every experiment at every look.

    Args:
        looks: ``experiment_id, as_of, epoch`` (one row per look).
        assigned: ``experiment_id, as_of, segment, epoch, arm, units`` (cumulative units
            first assigned in the stratum, dense over looks).
        verified: the same shape with ``units`` = units with a verified primary outcome.
        shares: ``experiment_id, segment, arm, share`` (null share: allocation unknown).
        experiments: ``experiment_id, srm_n_star, allocation_known, check_verified``.
        violations: ``experiment_id, as_of, epoch, bad, total`` (cumulative in the epoch).
        drift: ``experiment_id, as_of, baseline_drift`` (already per look).

    Returns:
        One row per look: ``srm_test, srm_sequential_p, srm_chisquare_p, srm_fired,
        imbalance_p_value, contract_violation_share, contract_violation_p,
        baseline_drift``, the flags ``invalid`` and ``invalid_since`` and the reason text
        ``invalid_reason``.
    """
    exp = experiments.select(
        "experiment_id", "allocation_known", "check_verified",
        pl.Series("concentration", np.asarray(tuned_concentration(experiments["srm_n_star"].to_numpy(), SRM_ALPHA),
                                              dtype=float).reshape(-1)),
    )
    in_epoch = pl.col("epoch") == pl.col("look_epoch")

    def prepared(frame):
        frame = frame.join(looks.select("experiment_id", "as_of", pl.col("epoch").alias("look_epoch")), on=LOOK)
        return frame.filter(in_epoch).drop("look_epoch").join(shares, on=["experiment_id", "segment", "arm"], how="left") \
            .join(exp, on="experiment_id")

    a = prepared(assigned)
    known = known_allocation(a.filter(pl.col("allocation_known")), "units")
    unknown = unknown_allocation(a.filter(~pl.col("allocation_known")), "units")
    srm = pl.concat([known, unknown])
    # verified units against the split actually assigned (not the declared one): a chance
    # imbalance of the assignment is the SRM test's business, not this one's
    observed = a.select("experiment_id", "as_of", "segment", "arm", pl.col("units").alias("assigned_units")).with_columns(
        (pl.col("assigned_units") / pl.col("assigned_units").sum().over(["experiment_id", "as_of", "segment"]))
        .alias("observed_share"))
    v = prepared(verified).filter(pl.col("check_verified")).join(
        observed, on=["experiment_id", "as_of", "segment", "arm"], how="inner"
    ).with_columns(pl.col("observed_share").alias("share")).filter(pl.col("share") > 0)
    v = v.filter(pl.col("share").count().over(["experiment_id", "as_of", "segment"]) >= 2)
    imbalance = known_allocation(v, "units").select(LOOK + [pl.col("p_sequential").alias("imbalance_p_value")])
    viol = violations.sort("experiment_id", "as_of")
    rate = rate_exceeds(viol["bad"].cast(pl.Float64).to_numpy(), viol["total"].cast(pl.Float64).to_numpy(),
                        VIOLATION_THRESHOLD)
    with np.errstate(divide="ignore"):
        log_e = np.log(np.asarray(rate.e_value, dtype=float).reshape(-1))
    viol = viol.with_columns(pl.Series("log_e", log_e))
    viol = viol.with_columns(pl.col("log_e").cum_max().over(["experiment_id", "epoch"], order_by="as_of").alias("run"))
    viol = viol.select(
        *LOOK,
        (pl.col("bad") / pl.col("total")).alias("contract_violation_share"),
        pl.min_horizontal(pl.lit(1.0), (-pl.col("run")).exp()).alias("contract_violation_p"),
    )
    out = (
        looks.select("experiment_id", "as_of", "epoch")
        .join(exp.select("experiment_id", "allocation_known"), on="experiment_id", how="left")
        .join(srm.rename({"p_sequential": "srm_sequential_p", "p_chisquare": "srm_chisquare_p"}), on=LOOK, how="left")
        .join(imbalance, on=LOOK, how="left")
        .join(viol, on=LOOK, how="left")
        .join(drift, on=LOOK, how="left")
        .with_columns(
            pl.when(pl.col("allocation_known")).then(pl.lit("known allocation (Lindon-Malek)"))
            .otherwise(pl.lit("constancy (allocation unknown)")).alias("srm_test"),
            (pl.col("srm_sequential_p") < SRM_ALPHA).fill_null(False).alias("srm_fired"),
            (pl.col("imbalance_p_value") < SRM_ALPHA).fill_null(False).alias("imbalance_fired"),
            (pl.col("contract_violation_p") < SRM_ALPHA).fill_null(False).alias("violations_fired"),
            pl.col("baseline_drift").fill_null(False),
        )
        .with_columns(
            (pl.col("srm_fired") | pl.col("imbalance_fired") | pl.col("violations_fired") | pl.col("baseline_drift"))
            .alias("fires")
        )
        .sort("experiment_id", "epoch", "as_of")
        .with_columns(
            pl.col("fires").cum_max().over(["experiment_id", "epoch"]).alias("invalid"),
            pl.when(pl.col("fires")).then(pl.col("as_of")).min().over(["experiment_id", "epoch"]).alias("first_fire"),
            *[pl.col(f).cum_max().over(["experiment_id", "epoch"]).alias(f"{f}_ever")
              for f in ("srm_fired", "imbalance_fired", "violations_fired", "baseline_drift")],
        )
        .with_columns(
            pl.when(pl.col("invalid")).then(pl.col("first_fire")).alias("invalid_since"),
            pl.concat_str(
                pl.when(pl.col("srm_fired_ever")).then(pl.format(
                    "sequential SRM fired ({}, p = {} < {})", "srm_test",
                    pl.col("srm_sequential_p").round_sig_figs(3), pl.lit(SRM_ALPHA))),
                pl.when(pl.col("imbalance_fired_ever")).then(pl.format(
                    "verified outcomes imbalanced between arms (p = {} < {})",
                    pl.col("imbalance_p_value").round_sig_figs(3), pl.lit(SRM_ALPHA))),
                pl.when(pl.col("baseline_drift_ever")).then(pl.lit("the control arm's context digest drifted")),
                pl.when(pl.col("violations_fired_ever")).then(pl.format(
                    "contract violations exceed {}% of its rows ({}% quarantined, p = {})",
                    pl.lit(round(VIOLATION_THRESHOLD * 100)), (pl.col("contract_violation_share") * 100).round(1),
                    pl.col("contract_violation_p").round_sig_figs(3))),
                separator="; ", ignore_nulls=True,
            ).alias("invalid_reason"),
        )
    )
    return out.select(
        "experiment_id", "as_of", "srm_test", "srm_sequential_p", "srm_chisquare_p", "srm_fired",
        "imbalance_p_value", "contract_violation_share", "contract_violation_p", "baseline_drift",
        "invalid", "invalid_since", "invalid_reason",
    )
