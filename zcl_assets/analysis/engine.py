"""The look: sufficient statistics of every experiment at every night to decisions, in one pass.

Pure polars and NumPy (no Dagster, no SQL): :func:`analyse` takes the frames of
:class:`LookInputs` (what ``look.py`` reads from the warehouse, or what a benchmark or a
simulation builds) and returns one row per night, experiment, metric and comparison with
the :data:`~zcl_assets.analysis.schema.EXPERIMENT_ANALYSIS` columns. Nothing loops over
experiments or comparisons: experiments, nights, arms and metrics have integer positions
(``grid.Grid``), statistics at a night are found by a sorted search, per-kind statistics
run on masks of whole columns, strata and families are reduced in sorted order.

The look is a chain of named steps (DESIGN section 6), each taking and returning a small
typed value:

1. ``quality.rule_one``: rule 1 at every night (stickiness needs the path);
2. ``estimate.rows``, ``estimate.arm_statistics``, ``estimate.strata``: both arms of every
   comparison at every night and stratum of the night's epoch (units first assigned after
   its ``reopened`` event), the strata combined into one estimate weighted by their units (a
   declared allocation change cannot confound it, Simpson);
3. ``estimate.descriptive``: the fixed-horizon figures per metric kind (labelled
   descriptive) and the relative lift on the stratified estimate;
4. ``verdict.progress``: units, verified share, days to the plan, power, plan reached, stalled;
5. ``verdict.burn_in_reasons``: rule 2 at every night;
6. ``verdict.sequence``: tonight's confidence sequence tuned at registration, the running
   minimum of its anytime p over the post-burn-in looks of the epoch, Holm over it;
7. ``verdict.deciding_interval``: the interval the rule reads, the running intersection of the
   confidence sequences read at tonight's Holm step (empty: not constant over time);
8. ``verdict.guardrails``: each guardrail's verdict and the one that holds ``adopt``;
9. ``verdict.decision``: ``stats.decision.decide`` on the evidence gathered;
10. ``table.table``: the rows of the output nights, with each reason in words and the figures behind it.

Every night of every experiment is computed (a decision reads the looks before it), whatever
``output`` asks for: so the nights a pass writes do not depend on which it writes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from zcl_assets.analysis.estimate import COVARIATE_COLUMNS, STAT_COLUMNS, arm_statistics, descriptive, nights, rows, strata
from zcl_assets.analysis.grid import Grid
from zcl_assets.analysis.quality import Validity, rule_one
from zcl_assets.analysis.schema import EXPERIMENT_ANALYSIS
from zcl_assets.analysis.table import Look, table
from zcl_assets.analysis.verdict import burn_in_reasons, deciding_interval, decision, guardrails, progress, sequence

__all__ = ["COVARIATE_COLUMNS", "STAT_COLUMNS", "LookInputs", "analyse", "chain", "validity"]


class LookInputs(NamedTuple):
    """Everything one pass of the look needs (frames; see ``look.py`` for their SQL).

    Attributes:
        comparisons: one row per experiment, metric, estimand and treatment arm (the design,
            ``design.comparisons``).
        looks: ``experiment_id, as_of, days_since_first_assignment, status, epoch,
            epoch_start, last_unit_day, output`` (``look.nights``: days since the epoch's
            first assignment, the epoch's start day, the last day a unit was first assigned
            in the epoch up to the night, null: none).
        arm_stats: cumulative sufficient statistics ``experiment_id, metric, arm, segment,
            day`` + :data:`STAT_COLUMNS` (rows only on days they changed).
        assigned: cumulative units first assigned ``experiment_id, arm, segment, day, units``.
        segments: ``experiment_id, segment, epoch``.
        shares: ``experiment_id, segment, arm, share`` (null share: allocation unknown).
        arms: ``experiment_id, arm, arm_order`` (registration order).
        experiments: ``experiment_id, primary_metric, srm_n_star, allocation_known,
            check_verified``.
        violations: ``experiment_id, epoch, day, bad, total`` (rows of that day).
        drift: ``experiment_id, epoch, drift_day`` (first day a second control digest showed).
        both_arms: ``experiment_id, day, users`` (users seen in a second arm that day).
    """

    comparisons: pl.DataFrame
    looks: pl.DataFrame
    arm_stats: pl.DataFrame
    assigned: pl.DataFrame
    segments: pl.DataFrame
    shares: pl.DataFrame
    arms: pl.DataFrame
    experiments: pl.DataFrame
    violations: pl.DataFrame
    drift: pl.DataFrame
    both_arms: pl.DataFrame


def validity(inputs: LookInputs, grid: Grid) -> Validity:
    """Rule 1 at every night of every experiment; the descriptive chi-square only at the output nights."""
    primary = inputs.experiments.select("experiment_id", pl.col("primary_metric").alias("metric"))
    verified = inputs.arm_stats.join(primary, on=["experiment_id", "metric"]).select(
        "experiment_id", "arm", "segment", "day", pl.col("n").alias("units"))
    output = np.zeros(grid.shape, dtype=bool)
    out_rows = inputs.looks.filter(pl.col("output"))
    output[grid.e(out_rows.get_column("experiment_id")), grid.d(out_rows.get_column("as_of"))] = True
    return rule_one(grid, inputs.assigned, verified, inputs.shares, inputs.experiments, inputs.violations, inputs.drift,
                    output)


def chain(inputs: LookInputs, grid: Grid) -> Look:
    """The steps of the look, in order, each on what the steps before it gave (the module docstring)."""
    valid = validity(inputs, grid)
    stratum_rows = rows(inputs.comparisons, inputs.looks, inputs.segments, grid)
    estimate = strata(stratum_rows, arm_statistics(inputs.arm_stats, grid, stratum_rows))
    at = nights(stratum_rows, estimate)
    done = progress(at, estimate, valid, inputs.looks, inputs.both_arms, grid)
    burn = burn_in_reasons(at, estimate, done.days)
    cs = sequence(at, estimate, burn, grid)
    interval = deciding_interval(at, estimate, cs, grid)
    held = guardrails(at, interval, estimate, burn, grid)
    decided = decision(at, interval, held, done, valid, burn)
    return Look(at, estimate, descriptive(at, estimate), cs, interval, held, done, valid, decided)


def analyse(inputs: LookInputs) -> pl.DataFrame:
    """One pass of the look over every experiment and night in ``inputs.looks``.

    Every night is computed (stickiness and the running intersection need the path); the rows
    of the nights with ``output`` set are returned.

    Returns:
        One row per output night, experiment, metric, estimand and treatment arm, with the
        :data:`EXPERIMENT_ANALYSIS` columns (except ``analysed_at``). Comparisons whose arms
        have no analysable units are kept, with decision ``continue`` or ``invalid``.
    """
    if inputs.looks.filter(pl.col("output")).height == 0 or inputs.comparisons.height == 0:
        return pl.DataFrame(schema=EXPERIMENT_ANALYSIS.polars)
    # the SQL aggregates exactly the metrics the design compares
    grid = Grid.build(inputs.looks, inputs.segments, inputs.arms, inputs.comparisons.select("experiment_id", "metric"))
    return table(chain(inputs, grid), inputs.looks, grid)
