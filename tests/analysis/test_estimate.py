"""The estimate steps of the look (estimate.py): arm statistics at each night, strata combined, descriptive figures.

Each expected figure is computed here from the published formula or by scipy and statsmodels.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tests.analysis.looks import DAY0, NIGHT, T0, anytime_p, binary, build, continuous, halfwidth, look, registration, row
from zcl_assets.analysis.engine import analyse
from zcl_assets.analysis.estimate import Rows, StratumStats, rows, strata
from zcl_assets.analysis.grid import Grid


def _arm_figures(eid, arm, day, values, segment, metric="score"):
    """Cumulative continuous figures of an arm from its unit values (sum and centred sum of squares)."""
    v = np.asarray(values, float)
    return {"experiment_id": eid, "metric": metric, "arm": arm, "segment": segment, "day": day, "n": v.size,
            "sum_v": float(v.sum()), "m2_v": float(((v - v.mean()) ** 2).sum()), "variance": None, "successes": None,
            "observations": float(v.size), "sum_y": None, "sum_m": None, "c_yy": None, "c_mm": None, "c_ym": None}


def _user_figures(eid, arm, day, y, m, segment=0, metric="score"):
    """Cumulative figures of a user-randomized arm from per-user sums ``y`` and session counts ``m``."""
    y, m = np.asarray(y, float), np.asarray(m, float)
    u = y / m  # per-user means
    return {"experiment_id": eid, "metric": metric, "arm": arm, "segment": segment, "day": day, "n": y.size,
            "sum_v": float(u.sum()), "m2_v": float(((u - u.mean()) ** 2).sum()), "variance": None, "successes": None,
            "observations": float(m.sum()), "sum_y": float(y.sum()), "sum_m": float(m.sum()),
            "c_yy": float(((y - y.mean()) ** 2).sum()), "c_mm": float(((m - m.mean()) ** 2).sum()),
            "c_ym": float(((y - y.mean()) * (m - m.mean())).sum())}


def _delta_ratio(y, m):
    """Ratio of sums and its delta-method variance (Deng, Lu and Litz 2018, eq. for the ratio of means)."""
    r = y.sum() / m.sum()
    var = (np.var(y, ddof=1) - 2 * r * np.cov(y, m)[0, 1] + r * r * np.var(m, ddof=1)) / (y.size * m.mean() ** 2)
    return r, var


def _users(rng, n, level):
    m = rng.integers(1, 6, n).astype(float)
    return m * level + rng.normal(0, 0.3, n) * np.sqrt(m), m


def test_small_table_reports_fisher_beside_the_score_test_and_flags_disagreement():
    # 12 units per arm: an expected cell below 5, so Fisher's exact test is reported too.
    reg = registration("e1", ["control", "treatment"], min_samples_per_arm=5)
    r = row(look([reg], [binary("e1", "control", NIGHT, 12, 2), binary("e1", "treatment", NIGHT, 12, 7)], NIGHT), NIGHT)
    table = [[7, 5], [2, 10]]
    assert r["fisher_p_value"] == pytest.approx(stats.fisher_exact(table).pvalue, rel=1e-9)
    from scipy.stats.contingency import odds_ratio

    ref = odds_ratio(table, kind="conditional")
    assert r["fisher_odds_ratio"] == pytest.approx(ref.statistic, rel=1e-6)
    ci = ref.confidence_interval(0.95)
    assert (r["fisher_or_ci_low"], r["fisher_or_ci_high"]) == (pytest.approx(ci.low, rel=1e-6), pytest.approx(ci.high, rel=1e-6))
    # the score interval excludes zero while Fisher's p (0.089) does not reject: flagged, not hidden
    assert r["ci_low"] > 0 and r["fisher_p_value"] > 0.05 and r["interval_test_disagree"]


def test_read_only_arrays_from_polars_do_not_crash_the_look():
    reg = registration("e6", ["control", "treatment"], metric="score", baseline_sd=0.2)
    inputs = build([reg], [continuous("e6", "control", NIGHT, 300, 0.6, 0.04),
                           continuous("e6", "treatment", NIGHT, 300, 0.65, 0.04)], NIGHT)
    # polars hands out read-only views of numeric columns without nulls
    assert not inputs.arm_stats.get_column("n").to_numpy().flags.writeable
    frame = analyse(inputs)
    r = row(frame, NIGHT)
    welch = stats.ttest_ind_from_stats(0.65, 0.2, 300, 0.6, 0.2, 300, equal_var=False)
    assert r["p_value"] == pytest.approx(welch.pvalue, rel=1e-9) and r["p_method"] == "welch_t"


def test_a_stratified_comparison_of_two_periods_against_a_hand_computed_normal_test():
    # 80/20 for ten nights, then 50/50 (declared). Unit values drawn once; each period has its
    # own effect (+0.04, then +0.01) and its own baseline. Reference (Cochran 1977, stratified
    # estimator with weights proportional to units): diff = sum w_s (mean_t,s - mean_c,s),
    # se^2 = sum w_s^2 (s2_t,s / n_t,s + s2_c,s / n_c,s), w_s = units_s / units, two-sided
    # normal p-value and 95% interval. Pooled arm figures: the mean and the sample variance
    # (ddof 1) of the concatenated values (numpy), the CS at sigma^2 = N se^2.
    rng = np.random.default_rng(20261130)
    reg = registration("st", ["control", "treatment"], [0.8, 0.2], metric="score", baseline_sd=0.2,
                       baseline_mean=0.5, min_samples_per_arm=10)
    change = T0 + dt.timedelta(days=10)
    events = [{"experiment_id": "st", "status": "active", "at": change, "reason": "allocation changed",
               "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    night = DAY0 + dt.timedelta(days=19)
    data = {("control", 0): rng.normal(0.50, 0.20, 800), ("treatment", 0): rng.normal(0.54, 0.25, 200),
            ("control", 1): rng.normal(0.60, 0.15, 500), ("treatment", 1): rng.normal(0.61, 0.18, 500)}
    figures = [_arm_figures("st", a, night, v, s) for (a, s), v in data.items()]
    assigned = [{"experiment_id": "st", "arm": f["arm"], "segment": f["segment"], "day": night, "units": f["n"]}
                for f in figures]
    r = row(look([reg], figures, night, assigned=assigned, events=events, output="last"))
    assert r["periods"] == 2 and r["ci_method"] == r["p_method"] == "stratified_normal"
    total = sum(v.size for v in data.values())
    diff = se2 = 0.0
    for s in (0, 1):
        t, c = data[("treatment", s)], data[("control", s)]
        w = (t.size + c.size) / total
        diff += w * (t.mean() - c.mean())
        se2 += w**2 * (t.var(ddof=1) / t.size + c.var(ddof=1) / c.size)
    se = math.sqrt(se2)
    z = stats.norm.isf(0.025)
    assert r["difference"] == pytest.approx(diff, rel=1e-10)
    assert r["p_value"] == pytest.approx(2 * stats.norm.sf(abs(diff) / se), rel=1e-9)
    assert (r["ci_low"], r["ci_high"]) == (pytest.approx(diff - z * se, rel=1e-9), pytest.approx(diff + z * se, rel=1e-9))
    pooled_t = np.concatenate([data[("treatment", 0)], data[("treatment", 1)]])
    pooled_c = np.concatenate([data[("control", 0)], data[("control", 1)]])
    assert (r["n_treatment"], r["n_control"]) == (700, 1300)
    assert r["mean_treatment"] == pytest.approx(pooled_t.mean(), rel=1e-12)
    assert r["mean_control"] == pytest.approx(pooled_c.mean(), rel=1e-12)
    assert r["variance_treatment"] == pytest.approx(pooled_t.var(ddof=1), rel=1e-9)
    assert r["variance_control"] == pytest.approx(pooled_c.var(ddof=1), rel=1e-9)
    # relative lift on the same stratified estimate as the difference (DESIGN section 6): the
    # stratified treatment mean over the stratified control mean, each with its stratified
    # squared standard error, log-scale delta method (Deng, Lu and Litz 2018); not the pooled
    # means, which an allocation change confounds (Simpson)
    st = sc = se2_t = se2_c = 0.0
    for s in (0, 1):
        t, c = data[("treatment", s)], data[("control", s)]
        w = (t.size + c.size) / total
        st, sc = st + w * t.mean(), sc + w * c.mean()
        se2_t, se2_c = se2_t + w**2 * t.var(ddof=1) / t.size, se2_c + w**2 * c.var(ddof=1) / c.size
    se_log = math.sqrt(se2_t / st**2 + se2_c / sc**2)
    assert r["relative_lift"] == pytest.approx(st / sc - 1, rel=1e-12)
    assert r["relative_lift"] != pytest.approx(pooled_t.mean() / pooled_c.mean() - 1, rel=1e-3)
    assert r["lift_ci_low"] == pytest.approx(math.exp(math.log(st / sc) - z * se_log) - 1, rel=1e-9)
    assert r["lift_ci_high"] == pytest.approx(math.exp(math.log(st / sc) + z * se_log) - 1, rel=1e-9)
    # the confidence sequence of the stratified estimate, tuned at the planned total (registered
    # ratio 0.2 / 0.8 treatment units per control unit)
    n_star = r["planned_n_per_arm"] * (1 + 0.25)
    rho2 = (-2 * math.log(0.0125) + math.log(1 - 2 * math.log(0.0125))) / n_star
    sigma2 = total * se2
    assert r["cs_p_value"] == pytest.approx(anytime_p(diff, sigma2, total, rho2), rel=1e-9)
    hw = halfwidth(sigma2, total, rho2, r["cs_level"])
    assert (r["cs_low"], r["cs_high"]) == (pytest.approx(diff - hw, rel=1e-9), pytest.approx(diff + hw, rel=1e-9))
    # the descriptive interval and its test agree (both come from the same normal statistic)
    assert r["interval_test_disagree"] is False


def test_the_session_weighted_ratio_of_a_user_randomized_experiment_by_the_delta_method():
    rng = np.random.default_rng(7)
    reg = registration("ur", ["control", "treatment"], metric="score", baseline_sd=0.3, randomization_unit="user",
                       sessions_per_unit="many", min_samples_per_arm=10)
    (yt, mt), (yc, mc) = _users(rng, 300, 0.56), _users(rng, 400, 0.50)
    figures = [_user_figures("ur", "treatment", NIGHT, yt, mt), _user_figures("ur", "control", NIGHT, yc, mc)]
    out = look([reg], figures, NIGHT)
    ratio = row(out, NIGHT, metric_kind="ratio_of_sums")
    per_user = row(out, NIGHT, metric_kind="continuous_mean")
    assert (ratio["role"], per_user["role"]) == ("secondary", "primary")
    (r_t, v_t), (r_c, v_c) = _delta_ratio(yt, mt), _delta_ratio(yc, mc)
    assert ratio["mean_treatment"] == pytest.approx(r_t, rel=1e-12)
    assert ratio["mean_control"] == pytest.approx(r_c, rel=1e-12)
    # the CS uses n times the delta-method variance of each arm
    assert ratio["variance_treatment"] == pytest.approx(300 * v_t, rel=1e-9)
    assert ratio["variance_control"] == pytest.approx(400 * v_c, rel=1e-9)
    se = math.sqrt(v_t + v_c)
    z = stats.norm.isf(0.025)
    assert ratio["difference"] == pytest.approx(r_t - r_c, rel=1e-12)
    assert (ratio["ci_low"], ratio["ci_high"]) == (pytest.approx(r_t - r_c - z * se, rel=1e-9),
                                                   pytest.approx(r_t - r_c + z * se, rel=1e-9))
    assert ratio["p_value"] == pytest.approx(2 * stats.norm.sf(abs(r_t - r_c) / se), rel=1e-9)
    assert (ratio["ci_method"], ratio["p_method"]) == ("delta_method_per_user_sums", "delta_method_z")
    # the primary per-user mean: Welch on the users' means (scipy)
    ut, uc = yt / mt, yc / mc
    welch = stats.ttest_ind(ut, uc, equal_var=False)
    assert per_user["difference"] == pytest.approx(ut.mean() - uc.mean(), rel=1e-10)
    assert per_user["p_value"] == pytest.approx(welch.pvalue, rel=1e-8)


def test_a_ratio_with_a_missing_sum_in_one_period_is_undefined_and_an_empty_period_does_not_count():
    # Two periods (a declared allocation change). Each period is one set of users; the pooled
    # ratio is sum Y / sum M over both periods' users, its variance that of the concatenated users.
    rng = np.random.default_rng(11)
    reg = registration("ur2", ["control", "treatment"], metric="score", baseline_sd=0.3, randomization_unit="user",
                       sessions_per_unit="many", min_samples_per_arm=10)
    events = [{"experiment_id": "ur2", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    users = {(a, s): _users(rng, 150 + 50 * s, 0.5 + 0.04 * (a == "treatment")) for a in ("control", "treatment")
             for s in (0, 1)}
    figures = [_user_figures("ur2", a, NIGHT, y, m, segment=s) for (a, s), (y, m) in users.items()]
    assigned = [{"experiment_id": "ur2", "arm": f["arm"], "segment": f["segment"], "day": NIGHT, "units": f["n"]}
                for f in figures]

    def ratio_row(figs):
        return row(look([reg], figs, NIGHT, assigned=assigned, events=events, output="last"), metric_kind="ratio_of_sums")

    both = ratio_row(figures)
    for arm, column in (("treatment", "mean_treatment"), ("control", "mean_control")):
        y = np.concatenate([users[(arm, 0)][0], users[(arm, 1)][0]])
        m = np.concatenate([users[(arm, 0)][1], users[(arm, 1)][1]])
        r, v = _delta_ratio(y, m)
        assert both[column] == pytest.approx(r, rel=1e-12)
        assert both[column.replace("mean", "variance")] == pytest.approx(y.size * v, rel=1e-9)
    # the treatment's first-period sums are missing (NaN) while it has units: the pooled ratio
    # is undefined, not the second period's ratio alone
    broken = [dict(f, sum_y=float("nan")) if (f["arm"], f["segment"]) == ("treatment", 0) else f for f in figures]
    r = ratio_row(broken)
    assert r["mean_treatment"] is None and r["variance_treatment"] is None
    assert r["mean_control"] == pytest.approx(both["mean_control"], rel=1e-12)
    # a period without units whose sums are NaN leaves the ratio of the other period
    empty = [dict(f, n=0, sum_v=0.0, m2_v=0.0, observations=0.0, sum_y=float("nan"), sum_m=float("nan"), c_yy=0.0,
                  c_mm=0.0, c_ym=0.0) if (f["arm"], f["segment"]) == ("treatment", 0) else f for f in figures]
    r = ratio_row(empty)
    y1, m1 = users[("treatment", 1)]
    assert r["n_treatment"] == 200
    assert r["mean_treatment"] == pytest.approx(y1.sum() / m1.sum(), rel=1e-12)
    assert r["variance_treatment"] == pytest.approx(200 * _delta_ratio(y1, m1)[1], rel=1e-9)


def test_a_period_in_which_one_arm_has_no_units_is_left_out_of_the_estimate():
    # Two periods; the treatment has no analysable units in the first (its figures never came),
    # so only the second period is a stratum: its difference is the estimate.
    reg = registration("gap", ["control", "treatment"], [0.9, 0.1], min_samples_per_arm=10)
    events = [{"experiment_id": "gap", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    night = DAY0 + dt.timedelta(days=19)
    figures = [binary("gap", "control", night, 900, 270),
               binary("gap", "control", night, 500, 300, segment=1), binary("gap", "treatment", night, 500, 330, segment=1)]
    r = row(look([reg], figures, night, events=events, output="last"))
    assert r["periods"] == 1
    assert r["difference"] == pytest.approx(330 / 500 - 300 / 500, abs=1e-12)
    # the same with the control missing in the first period
    mirrored = [binary("gap", "treatment", night, 100, 70)] + figures[1:]
    r = row(look([reg], mirrored, night, events=events, output="last"))
    assert r["periods"] == 1 and r["difference"] == pytest.approx(0.06, abs=1e-12)
    # and a comparison whose treatment never had units has no period at all
    none = row(look([reg], figures[:2], night, events=events, output="last"))
    assert none["periods"] == 0 and none["difference"] is None and none["n_treatment"] == 0


def test_the_as_of_search_finds_the_latest_row_of_a_key_up_to_each_night():
    from zcl_assets.analysis.estimate import _Lookup

    # key 0: rows on days -2 and -5 (before the first night, in no particular order) and 1;
    # key 1: a row on day 3 (after the last of three nights) and on day 0. Expected row per
    # (key, night) written out: the latest row with day <= night, -1 before any.
    keys = np.array([0, 0, 1, 0, 1, 2])
    days = np.array([-2, 1, 3, -5, 0, 2])
    lookup = _Lookup(keys, days, 3)
    q_keys = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
    q_nights = np.array([0, 1, 2, 0, 1, 2, 1, 2, 2])
    assert lookup(q_keys, q_nights).tolist() == [0, 1, 1, 4, 4, 4, -1, 5, -1]
    assert _Lookup(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 3)(np.array([0]), np.array([1])).tolist() == [-1]


def test_a_period_without_a_centred_sum_of_squares_leaves_the_pooled_variance_unknown():
    # Two periods of a continuous metric; the treatment's first-period figures carry no centred
    # sum of squares and no exported variance: the pooled sample variance is unknown (null), not
    # the second period's alone. With both known it is that of the concatenated values.
    rng = np.random.default_rng(5)
    reg = registration("m2", ["control", "treatment"], [0.5, 0.5], metric="score", baseline_sd=0.2,
                       min_samples_per_arm=10)
    events = [{"experiment_id": "m2", "status": "active", "at": T0 + dt.timedelta(days=10),
               "reason": "allocation changed", "allocation": '{"control": 0.4, "treatment": 0.6}'}]
    data = {(a, s): rng.normal(0.5, 0.2, 300 + 100 * s) for a in ("control", "treatment") for s in (0, 1)}
    figures = [_arm_figures("m2", a, NIGHT, v, s) for (a, s), v in data.items()]

    def pooled(figs):
        return row(look([reg], figs, NIGHT, events=events, output="last"))

    both = pooled(figures)
    values = np.concatenate([data[("treatment", 0)], data[("treatment", 1)]])
    assert both["variance_treatment"] == pytest.approx(values.var(ddof=1), rel=1e-9)
    missing = [dict(f, m2_v=None) if (f["arm"], f["segment"]) == ("treatment", 0) else f for f in figures]
    r = pooled(missing)
    assert r["variance_treatment"] is None and r["variance_control"] == pytest.approx(both["variance_control"])



def test_rows_repeat_each_comparison_at_each_output_night_and_stratum():
    # a declared allocation change on night 2 starts stratum 1; two output nights, but every
    # night is a row (a decision reads the looks before it): each comparison appears once per
    # night and stratum of the night's epoch, sorted by comparison, night, stratum
    reg = registration("s", ["control", "treatment"], [0.5, 0.5])
    change = {"experiment_id": "s", "status": "active", "at": T0 + dt.timedelta(days=2), "reason": "rebalance",
              "allocation": '{"control": 0.2, "treatment": 0.8}'}
    inputs = build([reg], [binary("s", "control", DAY0, 10, 5)], DAY0 + dt.timedelta(days=3), events=[change])
    inputs = inputs._replace(looks=inputs.looks.with_columns((pl.col("as_of") >= DAY0 + dt.timedelta(days=2)).alias("output")))
    grid = Grid.build(inputs.looks, inputs.segments, inputs.arms, inputs.comparisons.select("experiment_id", "metric"))
    at = rows(inputs.comparisons, inputs.looks, inputs.segments, grid)
    assert at.d.tolist() == [0, 0, 1, 1, 2, 2, 3, 3] and at.segment.tolist() == [0, 1] * 4 and at.cid.tolist() == [0] * 8
    assert (at.treatment.tolist(), at.control.tolist(), at.kinds.tolist()) == ([1] * 8, [0] * 8, ["binary_proportion"] * 8)


def test_strata_weigh_each_period_by_its_units_and_pool_the_arms():
    # two periods of one comparison and night, a continuous metric (sample variances 4, 1 then 9, 1):
    # weights are the periods' units, 200 / 600 and 400 / 600, so
    # diff = (1/3)(1.0 - 0.5) + (2/3)(2.0 - 1.0) = 5/6,
    # se2 = (1/3)^2 (4/100 + 1/100) + (2/3)^2 (9/300 + 1/100)
    at = Rows(None, None, np.array([0, 0]), np.array([0, 0]), np.array([0, 0]), np.array([0, 1]), np.array([0, 0]),
              np.array([1, 1]), np.array([0, 0]), np.array(["continuous_mean"] * 2))
    nan = np.full(2, np.nan)

    def arm(n, mean, var):
        n = np.asarray(n, float)
        return {"n": n, "sum_v": n * np.asarray(mean), "m2_v": (n - 1) * np.asarray(var), "variance": nan,
                "successes": nan, "observations": n, "sum_y": nan, "sum_m": nan, "c_yy": nan, "c_mm": nan, "c_ym": nan}

    est = strata(at, StratumStats(arm([100, 300], [1.0, 2.0], [4.0, 9.0]), arm([100, 100], [0.5, 1.0], [1.0, 1.0])))
    assert est.first.tolist() == [0] and est.periods.tolist() == [2.0] and est.n_total.tolist() == [600.0]
    assert est.diff[0] == pytest.approx(5 / 6, rel=1e-12)
    assert est.se2[0] == pytest.approx((1 / 9) * 0.05 + (4 / 9) * 0.04, rel=1e-12)
    # the pooled arms: 400 treatment units of mean (100 + 600) / 400 = 1.75 and the pooled
    # variance of the two periods' values (Chan, Golub and LeVeque 1979)
    values = np.concatenate([np.full(100, 1.0), np.full(300, 2.0)])
    within = 99 * 4.0 + 299 * 9.0
    assert est.treatment.n.tolist() == [400.0] and est.mean_t[0] == pytest.approx(1.75, rel=1e-12)
    assert est.var_t[0] == pytest.approx((within + ((values - 1.75) ** 2).sum()) / 399, rel=1e-12)


def test_the_lift_of_an_allocation_change_with_no_effect_is_zero_on_the_stratified_estimate():
    # 90/10 for ten days (success 0.2 in both arms), then 50/50 (0.6 in both): no effect. The
    # pooled means (480 / 1,400 in control, 320 / 600 in treatment) would read a lift of +55.6%;
    # the stratified means are equal, w = (1,000, 1,000) / 2,000:
    # mean = 0.5 * 0.2 + 0.5 * 0.6 = 0.4 in both arms, so the lift is 0, its log-scale interval
    # from se^2 = sum w^2 p (1 - p) / n per arm (Deng, Lu and Litz 2018, delta method)
    reg = registration("ac", ["control", "treatment"], [0.9, 0.1], min_samples_per_arm=10)
    events = [{"experiment_id": "ac", "status": "active", "at": T0 + dt.timedelta(days=10), "reason": "rebalance",
               "allocation": '{"control": 0.5, "treatment": 0.5}'}]
    night = DAY0 + dt.timedelta(days=19)
    figures = [binary("ac", "control", night, 900, 180, segment=0), binary("ac", "treatment", night, 100, 20, segment=0),
               binary("ac", "control", night, 500, 300, segment=1), binary("ac", "treatment", night, 500, 300, segment=1)]
    r = row(look([reg], figures, night, events=events, output="last"))
    assert r["difference"] == pytest.approx(0.0, abs=1e-15) and r["periods"] == 2
    pooled = (20 + 300) / 600 / ((180 + 300) / 1400) - 1
    assert pooled == pytest.approx(0.5556, abs=1e-4)
    assert r["relative_lift"] == pytest.approx(0.0, abs=1e-12)
    se2_t = 0.25 * 0.16 / 100 + 0.25 * 0.24 / 500
    se2_c = 0.25 * 0.16 / 900 + 0.25 * 0.24 / 500
    half = stats.norm.isf(0.025) * math.sqrt(se2_t / 0.4**2 + se2_c / 0.4**2)
    assert (r["lift_ci_low"], r["lift_ci_high"]) == (pytest.approx(math.exp(-half) - 1, rel=1e-9),
                                                     pytest.approx(math.exp(half) - 1, rel=1e-9))
