"""Experience Gain per task and pooled across tasks, and the claim level it supports.

Per task (one ``memory_mode`` experiment: recall on = the treatment arm, recall off = the
control arm) the gain is the difference of the primary metric's means over analysis units,
signed by the registered direction so that a positive gain always means recall helped
(for ``decrease`` metrics, off minus on), with Welch's interval. Tasks are pooled within one
organization and metric by random effects with the Hartung-Knapp-Sidik-Jonkman interval
(:func:`zcl_assets.stats.meta.hksj_random_effects`).

Claim levels (:func:`claim`), first match wins:

* ``none`` while fewer than :data:`MIN_TASK_TYPES` task types have reached their registered
  minimum sample per arm (repeated runs), or the pooled interval is undefined or contains zero;
* ``none`` also while any pooled task's experiment has not decided the same way (``adopt``
  for a gain, ``reject`` for a loss) at its latest look: the pooled interval is a
  fixed-horizon figure recomputed every night, so repeated looks would inflate its error; it
  is reported as descriptive support, and a claim rests on the experiments' anytime-valid
  decisions;
* ``positive`` when the pooled interval lies above zero and every pooled task's experiment
  decided ``adopt``: recall improved the primary metric across tasks and repeated runs;
* ``negative`` when it lies below zero and every one decided ``reject``: recall made it worse.

The interval is the Knapp-Hartung one with the ``max(1, q)`` rule (Röver, Knapp and Friede
2015), so with two or three agreeing tasks it is never narrower than the fixed-effect one.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from zcl_assets.stats.continuous import welch
from zcl_assets.stats.meta import MetaResult, hksj_random_effects

CLAIM_LEVELS = ("none", "positive", "negative")
MIN_TASK_TYPES = 2
"""Task types a claim needs (seed note 002: "positive across multiple tasks and repeated trials")."""


class TaskGain(NamedTuple):
    """Experience Gain of one task.

    Attributes:
        gain: direction-signed difference of means, recall on vs off (metric units);
            positive means recall helped. NaN when an arm is empty.
        ci_low: lower end of Welch's ``1 - alpha`` interval (signed like ``gain``).
        ci_high: upper end.
        variance: squared standard error ``var_on/n_on + var_off/n_off`` (for pooling).
        df: Welch-Satterthwaite degrees of freedom.

    Interval, variance and df are NaN when an arm has fewer than 2 units or both arms
    are constant.
    """

    gain: float
    ci_low: float
    ci_high: float
    variance: float
    df: float


def task_gain(n_on, mean_on, var_on, n_off, mean_off, var_off, direction: str = "increase", alpha: float = 0.05) -> TaskGain:
    """Experience Gain of one task from the sufficient statistics of its two arms.

    Args:
        n_on, mean_on, var_on: analysis units, mean and sample variance (ddof 1) with recall.
        n_off, mean_off, var_off: the same without recall.
        direction: the registered direction of the primary metric, ``increase`` or ``decrease``.
        alpha: two-sided level of the interval, in (0, 1).

    Returns:
        :class:`TaskGain`.

    Raises:
        ValueError: unknown direction, alpha outside (0, 1), negative counts or variances.

    References:
        Welch, B. L. (1947). Biometrika 34:28-35 (via :func:`zcl_assets.stats.continuous.welch`).

    Examples:
        >>> g = task_gain(50, 0.70, 0.04, 50, 0.60, 0.04)
        >>> round(g.gain, 3), round(g.variance, 5)
        (0.1, 0.0016)
        >>> round(task_gain(50, 36.0, 100.0, 50, 40.0, 100.0, direction="decrease").gain, 3)
        4.0
    """
    if direction not in ("increase", "decrease"):
        raise ValueError(f"direction must be 'increase' or 'decrease', got {direction!r}")
    res = welch(n_on, mean_on, var_on, n_off, mean_off, var_off, alpha=alpha)
    diff, low, high = float(res.diff), float(res.ci_low), float(res.ci_high)
    if direction == "decrease":
        diff, low, high = -diff, -high, -low
    usable = math.isfinite(float(res.df))
    variance = float(var_on) / float(n_on) + float(var_off) / float(n_off) if usable else math.nan
    return TaskGain(diff, low, high, variance, float(res.df))


class PooledGain(NamedTuple):
    """Experience Gain pooled across tasks, with the claim it supports.

    Attributes:
        estimate: random-effects mean gain (metric units; NaN with fewer than 2 tasks).
        ci_low: lower end of the HKSJ ``1 - alpha`` interval.
        ci_high: upper end.
        tau2: between-task variance (DerSimonian-Laird).
        pvalue: HKSJ t-test p-value for no gain.
        tasks: tasks pooled.
        task_types: distinct task types among them.
        claim_level: ``none``, ``positive`` or ``negative``.
        reason: the level and why, in words.
    """

    estimate: float
    ci_low: float
    ci_high: float
    tau2: float
    pvalue: float
    tasks: int
    task_types: int
    claim_level: str
    reason: str


def claim(meta: MetaResult, task_types: int, waiting: int = 0, alpha: float = 0.05, min_task_types: int = MIN_TASK_TYPES,
          decisions: Sequence[str | None] = ()) -> tuple[str, str]:
    """The claim level of a pooled gain and its reason in words (rules in the module docstring).

    Args:
        meta: the pooled result over the tasks that reached their minimum sample.
        task_types: distinct task types among them.
        waiting: tasks still short of their minimum sample (named in the reason).
        alpha: level of the interval (for the wording).
        min_task_types: task types a claim needs.
        decisions: the latest decision of each pooled task's experiment (None: no look yet).
    """
    level = f"{100 * (1 - alpha):g}%"
    pending = f"; {waiting} more task{'s' if waiting != 1 else ''} still collecting" if waiting else ""
    if task_types < min_task_types:
        return "none", (f"{task_types} task type{'s' if task_types != 1 else ''} with repeated runs at the "
                        f"registered minimum sample per arm; a claim needs {min_task_types}{pending}")
    if not (math.isfinite(meta.ci_low) and math.isfinite(meta.ci_high)):
        return "none", f"the pooled interval is undefined (the task gains do not vary){pending}"
    interval = f"{level} HKSJ interval [{meta.ci_low:.4g}, {meta.ci_high:.4g}] over {meta.k} tasks ({task_types} task types)"
    for side, wanted, words, above in (("positive", "adopt", "raised", meta.ci_low > 0),
                                       ("negative", "reject", "lowered", meta.ci_high < 0)):
        if not above:
            continue
        where = "above" if side == "positive" else "below"
        undecided = sum(d != wanted for d in decisions)
        if undecided:
            return "none", (f"descriptive only: the {interval} lies {where} zero (pooled gain {meta.estimate:.4g}), but "
                            f"{undecided} of {len(decisions)} pooled tasks' experiments have not decided {wanted}; "
                            f"a claim rests on their anytime-valid decisions{pending}")
        return side, (f"recall {words} the primary metric by {abs(meta.estimate):.4g}; {interval} lies {where} zero, "
                      f"and every pooled task's experiment decided {wanted}{pending}")
    return "none", f"the {interval} contains zero (pooled gain {meta.estimate:.4g}){pending}"


def _dersimonian_laird_hksj(y: np.ndarray, v: np.ndarray, alpha: float) -> MetaResult:
    """DerSimonian-Laird tau^2 truncated at zero, with the HKSJ interval.

    DerSimonian and Laird (1986) set tau^2 = max(0, (Q - df) / c). statsmodels 0.15's
    ``combine_effects(method_re="dl")`` leaves it negative when Q < df, which gives weights
    1/(v_i + tau^2) larger than the fixed-effect ones and an estimate that can fall outside
    the studies (three gains near 0.1 pooled to 0.185). When that happens tau^2 is zero and
    the Paule-Mandel fit, whose estimating equation also has no positive root then, gives
    exactly the truncated result (weights 1/v_i).
    """
    with warnings.catch_warnings():  # statsmodels takes the square root of a negative variance first
        warnings.simplefilter("ignore", RuntimeWarning)
        meta = hksj_random_effects(y, v, alpha=alpha, method="dl")
    if math.isfinite(meta.tau2) and meta.tau2 < 0:
        meta = hksj_random_effects(y, v, alpha=alpha, method="pm")
    return meta


def pool_gains(gains: Sequence[float], variances: Sequence[float], task_types: Sequence[str], waiting: int = 0,
               alpha: float = 0.05, min_task_types: int = MIN_TASK_TYPES,
               decisions: Sequence[str | None] | None = None) -> PooledGain:
    """Pool per-task gains by random effects with the HKSJ interval and state the claim.

    Args:
        gains: per-task gains (one metric, one organization; direction-signed).
        variances: their squared standard errors.
        task_types: the task type of each gain (several experiments may share one).
        waiting: tasks not pooled because they are short of their minimum sample.
        alpha: two-sided level, in (0, 1).
        min_task_types: task types a claim needs.
        decisions: the latest decision of each task's experiment (None: every one taken as
            decided, for pooling figures alone).

    Returns:
        :class:`PooledGain`; tasks with a non-finite gain or variance are left out.

    Raises:
        ValueError: lengths differ, or the inputs of :func:`hksj_random_effects` are invalid.

    References:
        IntHout, J., Ioannidis, J. P. A. and Borm, G. F. (2014). BMC Medical Research
        Methodology 14:25. DerSimonian, R. and Laird, N. (1986). Controlled Clinical Trials 7:177-188.
    """
    if not len(gains) == len(variances) == len(task_types):
        raise ValueError("gains, variances and task_types must have the same length")
    y, v = np.asarray(gains, dtype=float), np.asarray(variances, dtype=float)
    keep = np.isfinite(y) & np.isfinite(v) & (v > 0)
    types = len({t for t, k in zip(task_types, keep, strict=True) if k})
    meta = _dersimonian_laird_hksj(y[keep], v[keep], alpha)
    pooled_decisions = ([] if decisions is None else
                        [d for d, k in zip(decisions, keep, strict=True) if k])
    level, reason = claim(meta, types, waiting=waiting, alpha=alpha, min_task_types=min_task_types,
                          decisions=pooled_decisions)
    return PooledGain(meta.estimate, meta.ci_low, meta.ci_high, meta.tau2, meta.pvalue, int(keep.sum()), types, level, reason)
