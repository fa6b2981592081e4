"""Seeded simulation: user-randomized experiment analysed at session level.

Users are randomized 50/50 and return for several sessions; each user has a
random effect, so sessions of one user are correlated (ICC 0.5). The target
is the difference in per-session means, treatment minus control.

Per-user sums are drawn exactly in distribution instead of simulating each
session: with ``m`` sessions, ``b`` the user effect and session noise
``e ~ N(0, 1)``, ``sum e ~ N(0, m)`` and ``sum e^2 = (sum e)^2 / m + chi2(m-1)``.
Runs in well under a second.
"""

import numpy as np
import pytest
from scipy import stats

from zcl_assets.stats.clustering import delta_method_difference, delta_method_mean
from zcl_assets.stats.continuous import welch
from zcl_assets.stats.srm import DEFAULT_PRIOR_CONCENTRATION, srm_chisquare, srm_sequential

REPS = 1000
USERS_PER_ARM = 400
EFFECT = 0.2
MC_SE_95 = np.sqrt(0.95 * 0.05 / REPS)  # Monte Carlo s.e. of a coverage near 0.95: 0.0069


def _arm(rng, mu):
    """Per-user sums for REPS replicate arms: returns (m, Y, sum of y^2)."""
    m = 1 + rng.poisson(4.0, (REPS, USERS_PER_ARM))  # sessions per user, mean 5
    b = rng.normal(0.0, 1.0, (REPS, USERS_PER_ARM))  # user random effect, sd 1
    s = rng.normal(0.0, 1.0, (REPS, USERS_PER_ARM)) * np.sqrt(m)  # sum of session noise
    ss = s**2 / m + rng.chisquare(np.maximum(m - 1, 1)) * (m > 1)
    level = mu + b
    y = m * level + s
    y2 = m * level**2 + 2 * level * s + ss
    return m, y, y2


def _moments(m, y):
    return delta_method_mean(
        USERS_PER_ARM, y.sum(-1), (y**2).sum(-1), m.sum(-1), (m**2).sum(-1), (y * m).sum(-1)
    )


def _naive(m, y, y2):
    """The project's Welch interval on session-level figures, ignoring the clustering."""
    n = m.sum(-1)
    mean = y.sum(-1) / n
    var = (y2.sum(-1) - n * mean**2) / (n - 1)
    return n, mean, var


def test_delta_method_covers_and_naive_undercovers():
    rng = np.random.default_rng(2026)
    m_t, y_t, y2_t = _arm(rng, 1.0 + EFFECT)
    m_c, y_c, y2_c = _arm(rng, 1.0)

    d = delta_method_difference(_moments(m_t, y_t), _moments(m_c, y_c))
    cover = np.mean((d.ci_low <= EFFECT) & (EFFECT <= d.ci_high))
    # nominal 0.95 within 3 Monte Carlo s.e. (0.021)
    assert abs(cover - 0.95) < 3 * MC_SE_95, cover

    naive = welch(*_naive(m_t, y_t, y2_t), *_naive(m_c, y_c, y2_c))
    naive_cover = np.mean((naive.ci_low <= EFFECT) & (EFFECT <= naive.ci_high))
    # Expected coverage of the naive interval: its standard error is too small by the square
    # root of the design effect, 1 + ((1 + cv^2) m - 1) ICC with mean cluster size m = 5,
    # cv = sd(m) / m = 2 / 5 and ICC = 1 / (1 + 1) = 0.5 (Eldridge, Ashby, Kerry 2006): DE =
    # 3.4, so coverage 2 Phi(1.96 / sqrt(3.4)) - 1 = 0.712.
    de = 1 + ((1 + (2.0 / 5.0) ** 2) * 5.0 - 1) * 0.5
    assert de == pytest.approx(3.4)
    expected = 2 * stats.norm.cdf(stats.norm.isf(0.025) / np.sqrt(de)) - 1
    assert abs(naive_cover - expected) < 3 * np.sqrt(expected * (1 - expected) / REPS), (naive_cover, expected)
    # the point estimates are the same ratio of sums; only the variance differs
    np.testing.assert_allclose(naive.diff, d.diff)


def test_srm_on_users_does_not_fire_falsely():
    """Users arrive nightly (30 nights, ~60 a night), 50/50 assignment.

    Rejection rate of the sequential test (any look) and of the final
    chi-square must be <= 0.05 + 3 Monte Carlo s.e. (0.05 + 0.0207 for 1000 runs).
    """
    rng = np.random.default_rng(99)
    arrivals = rng.poisson(60, (REPS, 30))
    treated = rng.binomial(arrivals, 0.5)
    nightly = np.stack([treated, arrivals - treated], axis=-1)
    cum = nightly.cumsum(axis=1)
    limit = 0.05 + 3 * np.sqrt(0.05 * 0.95 / REPS)
    seq = srm_sequential(cum[:, :, None, :], np.full((1, 1, 1, 2), 0.5), np.full((REPS, 1, 1), DEFAULT_PRIOR_CONCENTRATION),
                         np.zeros((REPS, 30), dtype=np.int64), np.ones((REPS, 30, 1), dtype=bool))
    assert np.mean(seq[:, -1] < 0.05) <= limit
    chi = srm_chisquare(cum[:, -1], cum[:, -1].sum(axis=1, keepdims=True) * 0.5, np.ones((REPS, 2), dtype=bool))
    assert np.mean(chi < 0.05) <= limit
