"""Segment breakdowns of the primary metric: exploratory, never a decision.

For every experiment whose primary metric is a rate (``success``), each treatment arm against
the control within each segment of the session's model and of its budget
(``sql/aggregate_segment_breakdowns.sql``): the difference of proportions with the
Miettinen-Nurminen score interval and p (``stats.binary.miettinen_nurminen``, the descriptive
test of the look), and the p adjusted by Benjamini and Hochberg (1995) across the segments of
that comparison and dimension (``statsmodels.stats.multitest.multipletests``, ``fdr_bh``): the
false discovery rate among the segments a reader singles out, for a reader who looks for
segments where the effect differs. The unit is the session, whatever the randomization unit,
and every epoch counts: these figures describe where the effect lies, they never decide.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import polars as pl

from sql import load_sql
from zcl_assets.analysis.metrics import metric_spec
from zcl_assets.analysis.schema import SEGMENT_BREAKDOWNS
from zcl_assets.stats.binary import miettinen_nurminen
from zcl_assets.warehouse import has_table, transaction

LABEL = "exploratory"
METHOD = "Miettinen-Nurminen score; Benjamini-Hochberg across the segments of the comparison and dimension"


def segment_counts(con: duckdb.DuckDBPyConnection, as_of: dt.date) -> pl.DataFrame:
    """Sessions and successes per experiment, arm, dimension and segment, as of the end of ``as_of``
    (from the experience's daily counts, ``zcl_assets.experience.days``)."""
    if not has_table(con, "internal.experience_days"):
        return pl.DataFrame(schema={"experiment_id": pl.String, "arm": pl.String, "is_control": pl.Boolean,
                                    "dimension": pl.String, "segment": pl.String, "sessions": pl.Int64, "successes": pl.Int64})
    primary = con.execute("SELECT experiment_id, primary_metric FROM staged_experiments").fetchall()
    chosen = pl.DataFrame({"experiment_id": [e for e, m in primary if metric_spec(m).binary]}, schema={"experiment_id": pl.String})
    end = dt.datetime.combine(as_of + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    with transaction(con, breakdown_experiments=chosen):
        return con.execute(load_sql("aggregate_segment_breakdowns"), {"end": end}).pl()


def segment_breakdowns(counts: pl.DataFrame, as_of: dt.date) -> pl.DataFrame:
    """The rows of ``segment_breakdowns`` from :func:`segment_counts` (columns of ``schema.SEGMENT_BREAKDOWNS``)."""
    key = ["experiment_id", "dimension", "segment"]
    control = counts.filter("is_control").select(*key, pl.col("arm").alias("control_arm"),
                                                 pl.col("sessions").alias("n_control"),
                                                 pl.col("successes").alias("x_control"))
    arms = counts.filter(~pl.col("is_control")).select("experiment_id", pl.col("arm").alias("treatment_arm")).unique()
    pairs = (arms.join(counts.filter(~pl.col("is_control")).select("experiment_id", "dimension", "segment").unique(),
                       on="experiment_id")
             .join(control.select("experiment_id", "control_arm").unique(), on="experiment_id")
             .join(control.drop("control_arm"), on=key, how="left")
             .join(counts.select(*key, pl.col("arm").alias("treatment_arm"), pl.col("sessions").alias("n_treatment"),
                                 pl.col("successes").alias("x_treatment")), on=[*key, "treatment_arm"], how="left")
             .with_columns(pl.col("n_control", "x_control", "n_treatment", "x_treatment").fill_null(0))
             .sort("experiment_id", "treatment_arm", "dimension", "segment"))
    if pairs.height == 0:
        return pl.DataFrame(schema=SEGMENT_BREAKDOWNS.polars)
    n_t, x_t = pairs.get_column("n_treatment").to_numpy(), pairs.get_column("x_treatment").to_numpy()
    n_c, x_c = pairs.get_column("n_control").to_numpy(), pairs.get_column("x_control").to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        score = miettinen_nurminen(x_t, n_t, x_c, n_c)
        rate_t, rate_c = np.where(n_t > 0, x_t / np.maximum(n_t, 1), np.nan), np.where(n_c > 0, x_c / np.maximum(n_c, 1), np.nan)
    out = pairs.with_columns(
        pl.lit(as_of).alias("as_of"), pl.Series("rate_treatment", rate_t), pl.Series("rate_control", rate_c),
        pl.Series("difference", score.diff), pl.Series("ci_low", score.ci_low), pl.Series("ci_high", score.ci_high),
        pl.Series("p", score.pvalue),
    ).with_columns(pl.col("difference", "ci_low", "ci_high", "p").fill_nan(None))
    from statsmodels.stats.multitest import multipletests  # imported when used: 1 s of every start otherwise

    adjusted = np.full(out.height, np.nan)
    index = out.with_row_index("i")
    for _, group in index.group_by("experiment_id", "treatment_arm", "dimension", maintain_order=True):
        p = group.get_column("p").to_numpy().astype(float)
        p = np.where(np.isnan(p), 1.0, p)  # an empty arm in a segment still counts in the family, as p = 1
        adjusted[group.get_column("i").to_numpy()] = multipletests(p, method="fdr_bh")[1]
    return out.with_columns(pl.Series("p_bh", adjusted), pl.lit(LABEL).alias("label"), pl.lit(METHOD).alias("method")) \
        .select(list(SEGMENT_BREAKDOWNS.polars)).cast(SEGMENT_BREAKDOWNS.polars)


__all__ = ["LABEL", "METHOD", "segment_breakdowns", "segment_counts"]
