"""Segment breakdowns of the primary metric: exploratory, never a decision.

For every experiment, each treatment arm against the control within each segment of the
session's model and of its budget (``sql/aggregate_segment_breakdowns.sql``; values capped as the
look caps them):

* a rate (``success``): the difference of proportions with the Miettinen-Nurminen score interval
  and p (``stats.binary.miettinen_nurminen``, the descriptive test of the look);
* a continuous metric (time, tokens, score): the difference of means with Welch's t interval and p
  (``stats.continuous.welch``, from each segment's count, mean and sample variance);

and the p adjusted by Benjamini and Hochberg (1995) across the segments of that comparison and
dimension (``statsmodels.stats.multitest.multipletests``, ``fdr_bh``): the false discovery rate
among the segments a reader singles out, for a reader who looks for segments where the effect
differs. The unit is the session, whatever the randomization unit, and every epoch counts:
these figures describe where the effect lies, they never decide.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import polars as pl

from sql import load_sql
from zcl_assets.analysis.metrics import CATALOGUE, metric_spec
from zcl_assets.analysis.schema import SEGMENT_BREAKDOWNS
from zcl_assets.stats.binary import miettinen_nurminen
from zcl_assets.stats.continuous import welch
from zcl_assets.warehouse import has_table, transaction

LABEL = "exploratory"
METHOD = "Miettinen-Nurminen score; Benjamini-Hochberg across the segments of the comparison and dimension"
"""The methods of a rate's breakdown."""
WELCH_METHOD = "Welch t; Benjamini-Hochberg across the segments of the comparison and dimension"
"""The methods of a continuous metric's breakdown."""

_ARM = ("sessions", "successes", "mean", "variance")


def segment_counts(con: duckdb.DuckDBPyConnection, as_of: dt.date) -> pl.DataFrame:
    """Sessions, successes, mean and variance of the primary metric per experiment, arm, dimension and
    segment, as of the end of ``as_of`` (exact sums at the metric's resolution: a rerun is bit-identical),
    from the experience's daily counts (``zcl_assets.experience.days``)."""
    if not has_table(con, "internal.experience_days"):  # no experience built yet
        return pl.DataFrame(schema={"experiment_id": pl.String, "arm": pl.String, "is_control": pl.Boolean,
                                    "dimension": pl.String, "segment": pl.String, "metric": pl.String,
                                    "sessions": pl.Int64, "successes": pl.Int64, "mean": pl.Float64, "variance": pl.Float64})
    primary = con.execute("SELECT experiment_id, primary_metric FROM staged_experiments").fetchall()
    chosen = pl.DataFrame([(e, m, CATALOGUE[m].resolution) for e, m in primary if m in CATALOGUE],
                          schema={"experiment_id": pl.String, "metric": pl.String, "resolution": pl.Float64}, orient="row")
    end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    with transaction(con, breakdown_experiments=chosen):
        return con.execute(load_sql("aggregate_segment_breakdowns"), {"end": end}).pl()


def _pairs(counts: pl.DataFrame) -> pl.DataFrame:
    """Each treatment arm beside the control in every segment either has (an arm without sessions there: 0)."""
    key = ["experiment_id", "dimension", "segment"]

    def side(frame: pl.DataFrame, suffix: str) -> list[pl.Expr]:
        return [pl.col(c).alias(f"{c}_{suffix}") for c in _ARM]

    control = counts.filter("is_control").select(*key, "metric", pl.col("arm").alias("control_arm"), *side(counts, "c"))
    arms = counts.filter(~pl.col("is_control")).select("experiment_id", pl.col("arm").alias("treatment_arm")).unique()
    return (arms.join(counts.filter(~pl.col("is_control")).select(*key, "metric").unique(), on="experiment_id")
            .join(control.select("experiment_id", "control_arm").unique(), on="experiment_id")
            .join(control.drop("control_arm", "metric"), on=key, how="left")
            .join(counts.select(*key, pl.col("arm").alias("treatment_arm"), *side(counts, "t")),
                  on=[*key, "treatment_arm"], how="left")
            .with_columns(pl.col("sessions_c", "sessions_t").fill_null(0))
            .sort("experiment_id", "treatment_arm", "dimension", "segment"))


def _tests(pairs: pl.DataFrame) -> dict[str, np.ndarray]:
    """Difference, 95% interval and p of every pair: the score test of a rate, Welch's t of a mean."""
    def col(name):
        return pairs.get_column(name).cast(pl.Float64).to_numpy()

    n_t, n_c, binary = col("sessions_t"), col("sessions_c"), np.array([metric_spec(m).binary for m in pairs["metric"]])
    x_t, x_c = np.nan_to_num(col("successes_t")), np.nan_to_num(col("successes_c"))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = miettinen_nurminen(x_t, n_t, np.minimum(x_c, n_c), n_c)
        mean_t = np.where(n_t > 0, col("mean_t"), np.nan)
        mean_c = np.where(n_c > 0, col("mean_c"), np.nan)
        t = welch(n_t, np.nan_to_num(mean_t), np.nan_to_num(col("variance_t")), n_c, np.nan_to_num(mean_c),
                  np.nan_to_num(col("variance_c")))
    out = {name: np.where(binary, a, b) for name, a, b in (
        ("difference", score.diff, np.where((n_t > 0) & (n_c > 0), t.diff, np.nan)), ("ci_low", score.ci_low, t.ci_low),
        ("ci_high", score.ci_high, t.ci_high), ("p", score.pvalue, t.pvalue))}
    with np.errstate(invalid="ignore"):
        sd_t, sd_c = np.sqrt(col("variance_t")), np.sqrt(col("variance_c"))
    return {**out, "mean_treatment": mean_t, "mean_control": mean_c, "sd_treatment": np.where(binary, np.nan, sd_t),
            "sd_control": np.where(binary, np.nan, sd_c), "binary": binary}


def segment_breakdowns(counts: pl.DataFrame, as_of: dt.date) -> pl.DataFrame:
    """The rows of ``segment_breakdowns`` from :func:`segment_counts` (columns of ``schema.SEGMENT_BREAKDOWNS``)."""
    pairs = _pairs(counts)
    if pairs.height == 0:
        return pl.DataFrame(schema=SEGMENT_BREAKDOWNS.polars)
    figures = _tests(pairs)
    binary = figures.pop("binary")
    out = pairs.with_columns(
        pl.lit(as_of).alias("as_of"), pl.col("sessions_c").alias("n_control"), pl.col("sessions_t").alias("n_treatment"),
        pl.when(pl.Series(binary)).then(pl.col("successes_c").fill_null(0)).alias("x_control"),
        pl.when(pl.Series(binary)).then(pl.col("successes_t").fill_null(0)).alias("x_treatment"),
        *[pl.Series(name, values) for name, values in figures.items()],
        pl.Series("method", np.where(binary, METHOD, WELCH_METHOD).tolist(), dtype=pl.String),
    ).with_columns(pl.col(*figures).fill_nan(None))
    from statsmodels.stats.multitest import multipletests  # imported when used: 1 s of every start otherwise

    adjusted = np.full(out.height, np.nan)
    index = out.with_row_index("i")
    for _, group in index.group_by("experiment_id", "treatment_arm", "dimension", maintain_order=True):
        p = group.get_column("p").cast(pl.Float64).fill_null(np.nan).to_numpy()
        p = np.where(np.isnan(p), 1.0, p)  # an empty arm in a segment still counts in the family, as p = 1
        adjusted[group.get_column("i").to_numpy()] = multipletests(p, method="fdr_bh")[1]
    return out.with_columns(pl.Series("p_bh", adjusted), pl.lit(LABEL).alias("label")) \
        .select(list(SEGMENT_BREAKDOWNS.polars)).cast(SEGMENT_BREAKDOWNS.polars)


__all__ = ["LABEL", "METHOD", "WELCH_METHOD", "segment_breakdowns", "segment_counts"]
