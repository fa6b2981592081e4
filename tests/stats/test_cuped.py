"""CUPED against statsmodels OLS and the paper's variance formula on unit-level data."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from zcl_assets.stats.cuped import Moments, adjust, difference_share, explained_share, explained_share_bound


def _moments(v: np.ndarray, x: np.ndarray, h: np.ndarray) -> Moments:
    """Centered sums of one group, straight from its units (the oracle's own arithmetic)."""
    dv, dx, dh = v - v.mean(), x - x.mean(), h - h.mean()
    return Moments(*(np.asarray(a, dtype=float) for a in (
        v.size, v.mean(), x.mean(), h.mean(), dv @ dv, dx @ dx, dh @ dh, dx @ dh, dx @ dv, dh @ dv)))


def _world(seed: int, n_t: int = 400, n_c: int = 380, missing: float = 0.3, effect: float = 0.08):
    """Units with a history mean x (0 where missing, h = 0) correlated with a 0/1 outcome."""
    rng = np.random.default_rng(seed)
    n = n_t + n_c
    p = rng.beta(2.0, 2.0, n)  # each unit's own rate
    h = (rng.random(n) > missing).astype(float)
    x = np.where(h > 0, rng.binomial(8, p) / 8.0, 0.0)
    t = np.r_[np.ones(n_t), np.zeros(n_c)]
    v = (rng.random(n) < np.clip(p + effect * t, 0, 1)).astype(float)
    return v, x, h, t


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_adjusted_difference_is_the_ols_treatment_coefficient(seed):
    v, x, h, t = _world(seed)
    ols = sm.OLS(v, sm.add_constant(np.column_stack([t, x - x.mean(), h - h.mean()]))).fit()
    on = t > 0
    got = adjust(_moments(v[on], x[on], h[on]), _moments(v[~on], x[~on], h[~on]))
    assert float(got.diff) == pytest.approx(ols.params[1], rel=1e-10, abs=1e-12)
    assert got.theta == pytest.approx(ols.params[2:], rel=1e-9)
    # the paper's variance of the adjusted difference: each arm's residual variance over its units
    resid = v - ols.params[2] * x - ols.params[3] * h
    expected = resid[on].var(ddof=1) / on.sum() + resid[~on].var(ddof=1) / (~on).sum()
    se2 = got.resid_t / (on.sum() - 1) / on.sum() + got.resid_c / ((~on).sum() - 1) / (~on).sum()
    assert float(se2) == pytest.approx(expected, rel=1e-10)
    # and it is smaller than the unadjusted one: x carries the unit's own rate
    raw = v[on].var(ddof=1) / on.sum() + v[~on].var(ddof=1) / (~on).sum()
    assert se2 < 0.95 * raw


def test_explained_share_is_the_r_squared_of_the_covariate_regression():
    v, x, h, _ = _world(7)
    r2 = sm.OLS(v, sm.add_constant(np.column_stack([x, h]))).fit().rsquared
    assert float(explained_share(_moments(v, x, h))) == pytest.approx(r2, rel=1e-10)


def test_no_history_changes_nothing():
    """Every unit new (x = h = 0): theta is 0 and the adjusted figures are the raw ones."""
    v, _, _, t = _world(3)
    zero = np.zeros_like(v)
    on = t > 0
    got = adjust(_moments(v[on], zero[on], zero[on]), _moments(v[~on], zero[~on], zero[~on]))
    assert not bool(got.applies)
    assert float(got.diff) == pytest.approx(v[on].mean() - v[~on].mean(), abs=1e-15)
    assert float(got.resid_t) == pytest.approx(((v[on] - v[on].mean()) ** 2).sum())


def test_every_unit_with_history_uses_x_alone():
    """h = 1 everywhere has no variance: the fit is the one-covariate CUPED of the paper,
    theta = cov(x, v) / var(x) pooled within arms (OLS on x alone)."""
    v, x, _, t = _world(4, missing=0.0)
    one = np.ones_like(v)
    on = t > 0
    ols = sm.OLS(v, sm.add_constant(np.column_stack([t, x]))).fit()
    got = adjust(_moments(v[on], x[on], one[on]), _moments(v[~on], x[~on], one[~on]))
    assert float(got.diff) == pytest.approx(ols.params[1], rel=1e-9)
    assert got.theta[0] == pytest.approx(ols.params[2], rel=1e-9)
    assert got.theta[1] == 0.0


def test_vectorised_rows_match_one_by_one():
    worlds = [_world(s) for s in (11, 12)]
    parts = []
    for v, x, h, t in worlds:
        on = t > 0
        parts.append((_moments(v[on], x[on], h[on]), _moments(v[~on], x[~on], h[~on])))
    stack = [Moments(*(np.array([getattr(p[k], f) for p in parts]) for f in Moments._fields)) for k in (0, 1)]
    both = adjust(*stack)
    for i, (mt, mc) in enumerate(parts):
        assert both.diff[i] == pytest.approx(float(adjust(mt, mc).diff), rel=1e-12)


def test_the_plans_bound_is_the_adjusted_r2_less_olkin_and_finns_standard_errors():
    # n = 100, R^2 = 0.45, k = 2: adjusted 1 - 0.55 x 99 / 97 = 0.438660; s.e. sqrt(4 x 0.45 x 0.55^2 x 97^2 /
    # ((100^2 - 1) x 103)) = 0.070530; one-sided 90%: z = 1.281552, bound 0.438660 - 0.090388 = 0.348272
    assert float(explained_share_bound(0.45, 100, 0.9)) == pytest.approx(0.348272, abs=1e-6)
    # n = 1000, R^2 = 0.25: adjusted 1 - 0.75 x 999 / 997 = 0.2484955, s.e. 0.0236106, bound
    # 0.2484955 - 1.2815516 x 0.0236106 = 0.2182373
    assert float(explained_share_bound(0.25, 1000, 0.9)) == pytest.approx(0.2182373, abs=1e-6)
    # 95%: z = 1.6448536, 0.2484955 - 0.0388356 = 0.2096599
    assert float(explained_share_bound(0.25, 1000, 0.95)) == pytest.approx(0.2096599, abs=1e-6)
    # the plug-in is the measured R^2; a bound below 0 is 0 (n = 50, R^2 = 0.02: adjusted < 0)
    assert float(explained_share_bound(0.25, 1000, None)) == 0.25
    assert float(explained_share_bound(0.02, 50, 0.9)) == 0.0
    # too few units for two predictors, or no R^2: NaN
    got = explained_share_bound(np.array([0.3, np.nan, 0.3]), np.array([3, 100, 4]), 0.9)
    assert np.isnan(got[0]) and np.isnan(got[1]) and np.isfinite(got[2])


def test_the_bound_lies_below_the_true_rho2_about_as_often_as_its_confidence():
    """In a world where the covariate explains rho^2 = 0.25 exactly, histories of 100 units: the bound
    is below 0.25 in about 90% of them (a little more: it counts h, constant here, as a predictor);
    the measured R^2 itself, biased upwards, is below 0.25 in fewer than half."""
    rng = np.random.default_rng(2013)
    reps, n, rho = 4000, 100, 0.5
    x = rng.standard_normal((reps, n))
    v = rho * x + np.sqrt(1 - rho**2) * rng.standard_normal((reps, n))
    dx, dv = x - x.mean(axis=1, keepdims=True), v - v.mean(axis=1, keepdims=True)
    r2 = (dx * dv).sum(axis=1) ** 2 / ((dx * dx).sum(axis=1) * (dv * dv).sum(axis=1))
    below = float(np.mean(explained_share_bound(r2, n, 0.9) <= rho**2))
    assert 0.9 - 3 * np.sqrt(0.09 / reps) <= below <= 0.95  # MC s.e. 0.0047
    assert float(np.mean(explained_share_bound(r2, n, None) <= rho**2)) < 0.5


def test_the_difference_loses_the_covariates_share_of_each_arm():
    # control variance 0.21 (p = 0.3), treatment 0.2275 (0.35), two treatment units per control unit
    # (r = 2), rho^2 = 0.2 of the control's variance, the treatment arm keeping 0.9 of the covariance:
    # the difference's variance 0.21 + 0.2275 / 2 = 0.32375 loses 0.2 x 0.21 x (1 + 0.81 / 2) = 0.05901,
    # a share 0.182270
    assert float(difference_share(0.2, 0.21, 0.2275, 2.0, 0.9)) == pytest.approx(0.05901 / 0.32375, rel=1e-12)
    # equal arms, nothing changed by the treatment: the share is rho^2 itself (Deng et al. 2013)
    assert float(difference_share(0.3, 4.0, 4.0)) == pytest.approx(0.3, rel=1e-12)
    assert np.isnan(difference_share(0.3, 0.0, 0.0)) and np.isnan(difference_share(np.nan, 1.0, 1.0))
