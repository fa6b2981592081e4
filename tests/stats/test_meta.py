"""Tests for zcl_assets.stats.meta."""

import numpy as np
import pytest
from scipy import stats

from zcl_assets.stats.meta import hksj_random_effects

# metafor::dat.bcg (BCG vaccine trials): tpos, tneg, cpos, cneg
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
YI = np.log(TP / (TP + TN)) - np.log(CP / (CP + CN))  # escalc(measure = "RR")
VI = 1 / TP - 1 / (TP + TN) + 1 / CP - 1 / (CP + CN)


def test_bcg_against_metafor():
    # R: rma(measure = "RR", ai = tpos, bi = tneg, ci = cpos, di = cneg, data = dat.bcg,
    #        method = "DL", test = "knha")
    # tau^2 = 0.3088, Q(df = 12) = 152.2330, estimate -0.7141, p 0.0019,
    # ci.lb -1.1078, ci.ub -0.3204   (without test = "knha": -1.0644, -0.3638)
    res = hksj_random_effects(YI, VI)
    assert res.tau2 == pytest.approx(0.3088, abs=5e-5)
    assert res.q == pytest.approx(152.2330, abs=5e-5)
    assert res.estimate == pytest.approx(-0.7141, abs=5e-5)
    assert res.ci_low == pytest.approx(-1.1078, abs=5e-5)
    assert res.ci_high == pytest.approx(-0.3204, abs=5e-5)
    assert res.pvalue == pytest.approx(0.0019, abs=5e-5)
    assert res.df == 12 and res.k == 13


def test_hksj_hand_computation_dl_and_pm():
    for method in ("dl", "pm"):
        res = hksj_random_effects(YI, VI, method=method)
        w0 = 1 / VI
        mu0 = np.sum(w0 * YI) / w0.sum()
        q = np.sum(w0 * (YI - mu0) ** 2)
        if method == "dl":
            tau2 = max(0.0, (q - 12) / (w0.sum() - np.sum(w0**2) / w0.sum()))
        else:  # Paule-Mandel: generalised Q equals k - 1
            def gen_q(t):
                w = 1 / (VI + t)
                mu = np.sum(w * YI) / w.sum()
                return np.sum(w * (YI - mu) ** 2) - 12
            tau2 = __import__("scipy.optimize", fromlist=["brentq"]).brentq(gen_q, 0, 10, xtol=1e-14)
        w = 1 / (VI + tau2)
        mu = np.sum(w * YI) / w.sum()
        se_hksj = np.sqrt(np.sum(w * (YI - mu) ** 2) / (12 * w.sum()))
        half = stats.t.ppf(0.975, 12) * se_hksj
        assert res.tau2 == pytest.approx(tau2, rel=1e-6)
        assert res.estimate == pytest.approx(mu, rel=1e-6)
        assert res.ci_low == pytest.approx(mu - half, rel=1e-6)
        assert res.ci_high == pytest.approx(mu + half, rel=1e-6)


def test_meta_degenerate():
    res = hksj_random_effects([0.1], [0.01])
    assert np.isnan(res.estimate) and res.k == 1
    res = hksj_random_effects([0.1, np.nan, 0.3], [0.01, 0.02, 0.0])  # NaN and zero variance dropped
    assert res.k == 1 and np.isnan(res.ci_low)
    # identical effects: the plain HKSJ se is 0 (no interval); floored at q = 1 (Röver, Knapp and
    # Friede 2015) it is the random-effects one, sqrt(1 / sum w) with w = (100, 50, 33.33):
    # sqrt(1 / 183.333) = 0.0738549, t(0.975, 2) = 4.302653, half-width 0.317771
    plain = hksj_random_effects([0.2, 0.2, 0.2], [0.01, 0.02, 0.03], floor_q=False)
    assert plain.estimate == pytest.approx(0.2) and np.isnan(plain.pvalue) and np.isnan(plain.ci_low)
    same = hksj_random_effects([0.2, 0.2, 0.2], [0.01, 0.02, 0.03])
    assert (same.ci_low, same.ci_high) == pytest.approx((0.2 - 0.3177720, 0.2 + 0.3177720), rel=1e-6)
    with pytest.raises(ValueError, match="variances"):
        hksj_random_effects([0.1, 0.2], [0.01, -0.01])
    with pytest.raises(ValueError, match="^method must be 'dl' or 'pm', got 'reml'$"):
        hksj_random_effects([0.1, 0.2], [0.01, 0.01], method="reml")
    for effects, variances in (([0.1, 0.2], [0.01]), ([[0.1, 0.2]], [[0.01, 0.01]])):
        with pytest.raises(ValueError, match="^effects and variances must be 1-D of the same length$"):
            hksj_random_effects(effects, variances)


def test_dersimonian_laird_tau2_is_truncated_at_zero():
    # Q < k - 1: the moment estimate (Q - (k - 1)) / (S1 - S2 / S1) is negative, so tau^2 = 0
    # and the pooled estimate is the fixed-effect one. Hand calculation:
    # w = 1/v = (100, 25, 400); mu = (100*0.10 + 25*0.12 + 400*0.08) / 525 = 45/525 = 0.0857143
    # Q = sum w (y - mu)^2 = 100*0.0142857^2 + 25*0.0342857^2 + 400*0.0057143^2
    #   = 0.0204082 + 0.0293878 + 0.0130612 = 0.0628571 < 2
    # HKSJ variance = Q / ((k - 1) sum w) = 0.0628571 / (2 * 525) = 5.9864e-5
    y = np.array([0.10, 0.12, 0.08])
    v = np.array([0.01, 0.04, 0.0025])
    res = hksj_random_effects(y, v, floor_q=False)
    assert res.tau2 == 0
    assert res.estimate == pytest.approx(45 / 525, rel=1e-12)
    assert res.q == pytest.approx(0.0628571428571, rel=1e-9)
    half = stats.t.ppf(0.975, 2) * np.sqrt(0.0628571428571 / (2 * 525))
    assert (res.ci_low, res.ci_high) == (pytest.approx(45 / 525 - half, rel=1e-9), pytest.approx(45 / 525 + half, rel=1e-9))
    # the plain HKSJ variance 5.9864e-5 is below the fixed-effect 1 / 525 = 1.9048e-3: with
    # max(1, q) = max(1, 0.0314) = 1 the interval is never narrower than that (Röver et al. 2015)
    floored = hksj_random_effects(y, v)
    half = stats.t.ppf(0.975, 2) * np.sqrt(1 / 525)
    assert (floored.ci_low, floored.ci_high) == (pytest.approx(45 / 525 - half, rel=1e-9),
                                                 pytest.approx(45 / 525 + half, rel=1e-9))
    assert floored.pvalue == pytest.approx(2 * stats.t.sf((45 / 525) / np.sqrt(1 / 525), 2), rel=1e-9)


def test_hksj_with_two_studies_the_fewest_it_takes():
    # By hand, y = (0.1, 0.3), v = (0.01, 0.02): w = (100, 50), mu_FE = 25/150 = 0.166667,
    # Q = 100 * 0.066667^2 + 50 * 0.133333^2 = 1.333333, DL tau^2 = (Q - 1) / (150 - 12500/150)
    # = 0.333333 / 66.666667 = 0.005; w* = (1/0.015, 1/0.025) = (66.667, 40), mu = 18.6667/106.667
    # = 0.175; HKSJ se^2 = (66.667 * 0.075^2 + 40 * 0.125^2) / (1 * 106.667) = 0.009375, se = 0.0968246;
    # t(0.975, 1) = 12.7062 (scipy), half-width 1.230273; p = 2 t.sf(0.175 / 0.0968246, 1) = 0.321722.
    res = hksj_random_effects([0.1, 0.3], [0.01, 0.02])
    assert res.k == 2 and res.df == 1.0
    assert res.tau2 == pytest.approx(0.005, rel=1e-9)
    assert res.estimate == pytest.approx(0.175, rel=1e-12)
    assert (res.ci_low, res.ci_high) == pytest.approx((0.175 - 1.2302729834, 0.175 + 1.2302729834), rel=1e-9)
    assert res.pvalue == pytest.approx(0.3217224930, rel=1e-8)
