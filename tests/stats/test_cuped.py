"""CUPED against statsmodels OLS and the paper's variance formula on unit-level data."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from zcl_assets.stats.cuped import Moments, adjust, explained_share


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
