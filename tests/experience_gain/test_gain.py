"""Experience Gain per task (Welch), pooled (random effects, HKSJ) and the claim level."""

import math

import numpy as np
import pytest
from scipy import stats

from zcl_assets.experience_gain.gain import claim, pool_gains, task_gain
from zcl_assets.stats.meta import MetaResult

# metafor::dat.bcg (BCG vaccine trials): tpos, tneg, cpos, cneg; yi = log relative risk
BCG = np.array(
    [
        [4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209], [62, 13536, 248, 12619],
        [33, 5036, 47, 5761], [180, 1361, 372, 1079], [8, 2537, 10, 619], [505, 87886, 499, 87892],
        [29, 7470, 45, 7232], [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338],
        [27, 16886, 29, 17825],
    ],
    dtype=float,
)
TP, TN, CP, CN = BCG.T
YI = np.log(TP / (TP + TN)) - np.log(CP / (CP + CN))
VI = 1 / TP - 1 / (TP + TN) + 1 / CP - 1 / (CP + CN)


def test_pooling_matches_metafors_published_hksj_figures_on_bcg():
    # R: rma(measure = "RR", ai = tpos, bi = tneg, ci = cpos, di = cneg, data = dat.bcg,
    #        method = "DL", test = "knha")
    # estimate -0.7141, ci.lb -1.1078, ci.ub -0.3204, tau^2 0.3088, p 0.0019
    pooled = pool_gains(YI, VI, [f"trial-{i}" for i in range(13)])
    assert pooled.estimate == pytest.approx(-0.7141, abs=5e-5)
    assert (pooled.ci_low, pooled.ci_high) == (pytest.approx(-1.1078, abs=5e-5), pytest.approx(-0.3204, abs=5e-5))
    assert pooled.tau2 == pytest.approx(0.3088, abs=5e-5)
    assert pooled.pvalue == pytest.approx(0.0019, abs=5e-5)
    assert (pooled.tasks, pooled.task_types, pooled.claim_level) == (13, 13, "negative")


def test_task_gain_is_welchs_difference_signed_by_direction():
    # by hand: se = sqrt(0.05/40 + 0.03/60) = 0.041833; df = (a+b)^2 / (a^2/39 + b^2/59) with
    # a = 0.00125, b = 0.0005 -> 68.96; interval 0.08 +- t(0.975, df) se
    g = task_gain(40, 0.68, 0.05, 60, 0.60, 0.03)
    a, b = 0.05 / 40, 0.03 / 60
    df = (a + b) ** 2 / (a * a / 39 + b * b / 59)
    half = stats.t.ppf(0.975, df) * math.sqrt(a + b)
    assert g.gain == pytest.approx(0.08)
    assert g.variance == pytest.approx(a + b)
    assert g.df == pytest.approx(df)
    assert (g.ci_low, g.ci_high) == (pytest.approx(0.08 - half), pytest.approx(0.08 + half))
    # minutes, direction decrease: 36 with recall, 40 without is a gain of +4
    d = task_gain(40, 36.0, 90.0, 60, 40.0, 110.0, direction="decrease")
    up = task_gain(60, 40.0, 110.0, 40, 36.0, 90.0)
    assert d.gain == pytest.approx(4.0) and (d.ci_low, d.ci_high) == (pytest.approx(up.ci_low), pytest.approx(up.ci_high))
    assert math.isnan(task_gain(1, 0.7, 0.0, 5, 0.6, 0.01).ci_low)  # one unit: no interval
    with pytest.raises(ValueError):
        task_gain(40, 0.68, 0.05, 60, 0.60, 0.03, direction="up")


def test_homogeneous_tasks_pool_with_tau2_zero():
    # Q = 0.51 < df = 2: DerSimonian-Laird's tau^2 = max(0, (Q - df) / c) = 0, so the weights are
    # 1/v_i and the HKSJ variance is max(1, q) / sum w with q = sum w (y - mu)^2 / (k - 1) = 0.26:
    # floored at 1 (Röver, Knapp and Friede 2015), so never below the fixed-effect variance
    y, v = np.array([0.10, 0.12, 0.08]), np.array([0.0016, 0.0009, 0.0025])
    w = 1 / v
    mu = (w * y).sum() / w.sum()
    q = (w * (y - mu) ** 2).sum() / 2
    assert q < 1
    half = stats.t.ppf(0.975, 2) * math.sqrt(max(1.0, q) / w.sum())
    pooled = pool_gains(y, v, ["a", "b", "c"])
    assert pooled.tau2 == 0.0
    assert pooled.estimate == pytest.approx(mu)
    assert (pooled.ci_low, pooled.ci_high) == (pytest.approx(mu - half), pytest.approx(mu + half))
    assert pooled.claim_level == "positive"
    assert pooled.reason.startswith(f"recall raised the primary metric by 0.1067; 95% HKSJ interval [{mu - half:.4g}, "
                                    f"{mu + half:.4g}]")


def test_claim_needs_two_task_types_and_an_interval_above_zero():
    one = pool_gains([0.2], [0.001], ["routing"])
    assert one.claim_level == "none" and "1 task type" in one.reason and "a claim needs 2" in one.reason
    # two experiments of the same task type are not two tasks
    same = pool_gains([0.2, 0.21], [0.001, 0.001], ["routing", "routing"])
    assert (same.tasks, same.task_types, same.claim_level) == (2, 1, "none")
    wide = pool_gains([0.2, -0.1], [0.001, 0.001], ["routing", "codegen"])
    assert wide.claim_level == "none" and "contains zero" in wide.reason
    waiting = pool_gains([0.2], [0.001], ["routing"], waiting=2)
    assert "2 more tasks still collecting" in waiting.reason
    nan = float("nan")
    level, reason = claim(MetaResult(0.2, nan, nan, 0.0, 0.0, 1.0, nan, 2), task_types=2)
    assert level == "none" and "undefined" in reason


def _simulated_tasks(rng, true_gains, n_per_arm=80, sd=0.2):
    gains, variances = [], []
    for gain in true_gains:
        on, off = rng.normal(0.6 + gain, sd, n_per_arm), rng.normal(0.6, sd, n_per_arm)
        g = task_gain(n_per_arm, on.mean(), on.var(ddof=1), n_per_arm, off.mean(), off.var(ddof=1))
        gains.append(g.gain)
        variances.append(g.variance)
    return gains, variances


def test_simulated_runs_with_a_true_gain_and_with_none():
    # Seeded. Each claim is a 95% interval statement, so another seed can miss (the next test
    # bounds how often a claim is made without a gain).
    rng = np.random.default_rng(20261129)
    tasks = ["routing", "summarize", "codegen", "triage"]
    gains, variances = _simulated_tasks(rng, [0.10] * 4)
    positive = pool_gains(gains, variances, tasks)
    assert positive.claim_level == "positive"
    assert positive.ci_low < 0.10 < positive.ci_high
    gains, variances = _simulated_tasks(rng, [0.0] * 4)
    none = pool_gains(gains, variances, tasks)
    assert none.claim_level == "none"
    assert none.ci_low < 0.0 < none.ci_high


def test_without_a_gain_a_positive_claim_is_rare():
    # A positive claim needs the pooled 95% interval above zero: under no gain that is a one-sided
    # error of at most 2.5% per pool. 400 seeded pools of 4 tasks; with p = 0.025 the count of
    # false claims is Binomial(400, 0.025): mean 10, sd 3.1, so 25 is more than 4.8 sd out.
    rng = np.random.default_rng(7)
    tasks = ["a", "b", "c", "d"]
    false_claims = sum(pool_gains(*_simulated_tasks(rng, [0.0] * 4, n_per_arm=40), tasks).claim_level == "positive"
                       for _ in range(400))
    assert false_claims <= 25


def test_a_gain_is_claimed_only_where_every_pooled_tasks_experiment_decided():
    # the pooled interval of test_homogeneous_tasks_pool_with_tau2_zero lies above zero; with two
    # of the three experiments still at continue it is descriptive only, never a claim
    y, v = np.array([0.10, 0.12, 0.08]), np.array([0.0016, 0.0009, 0.0025])
    held = pool_gains(y, v, ["a", "b", "c"], decisions=["adopt", "continue", "continue"])
    assert held.claim_level == "none" and held.ci_low > 0
    assert "2 of 3 pooled tasks' experiments have not decided adopt" in held.reason
    assert held.reason.startswith("descriptive only: the 95% HKSJ interval")
    decided = pool_gains(y, v, ["a", "b", "c"], decisions=["adopt"] * 3)
    assert decided.claim_level == "positive" and decided.reason.endswith("every pooled task's experiment decided adopt")
    # a loss needs every experiment at reject
    loss = pool_gains(-y, v, ["a", "b", "c"], decisions=["reject", "reject", "no_effect"])
    assert loss.claim_level == "none" and "1 of 3 pooled tasks' experiments have not decided reject" in loss.reason
    assert pool_gains(-y, v, ["a", "b", "c"], decisions=["reject"] * 3).claim_level == "negative"
