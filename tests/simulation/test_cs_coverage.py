"""Coverage: the CS covers the true difference at all looks at once; fixed intervals at n.

Target (DESIGN section 8): the CS covers the true effect at every nightly look of a run,
simultaneously, in at least 95% of runs; a fixed-horizon 95% interval at one fixed n
covers in about 95% of runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.simulation.test_aa_false_positive import N_DAYS, binary_paths, normal_paths
from tests.stats.references import confidence_sequence
from zcl_assets.stats.binary import miettinen_nurminen
from zcl_assets.stats.continuous import welch
from zcl_assets.stats.power import planned_sample

# (name, metric, mean_t, mean_c, sd, units/arm/day)
COVERAGE_SCENARIOS = [
    ("binary 0.35 vs 0.30, 40/day", "binary", 0.35, 0.30, None, 40),
    ("binary 0.12 vs 0.10, 60/day", "binary", 0.12, 0.10, None, 60),
    ("normal 11 vs 10 sd 5, 15/day", "continuous", 11.0, 10.0, 5.0, 15),
]


def cs_simultaneous_coverage(scenario, n_runs, seed, alpha=0.05):
    """Share of runs whose CS covers the true difference at all 30 nightly looks."""
    _, metric, m_t, m_c, sd, per_day = scenario
    rng = np.random.default_rng(seed)
    if metric == "binary":
        paths = binary_paths(rng, n_runs, N_DAYS, per_day, m_t, m_c)
    else:
        paths = normal_paths(rng, n_runs, N_DAYS, per_day, m_t, m_c, sd)
    n_plan = planned_sample(m_c, m_t - m_c, alpha, 0.8, 20, baseline_sd=sd, metric=metric).n_plan
    cs = confidence_sequence(paths.n_t, paths.mean_t, paths.var_t,
                             paths.n_c, paths.mean_c, paths.var_c, alpha, n_plan)
    true = m_t - m_c
    miss = (cs.ci_low > true) | (cs.ci_high < true)  # NaN looks (no data) never miss
    rate = 1.0 - miss.any(axis=1).mean()
    return rate, np.sqrt(rate * (1 - rate) / n_runs)


def fixed_horizon_coverage(n_per_arm, n_runs, seed, alpha=0.05):
    """Coverage at one fixed n of the project's descriptive intervals.

    Normal data (sd 5 vs 8, true difference 1): ``welch``; binary data (0.35 vs 0.30):
    ``miettinen_nurminen``, the binary interval the look reports.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(11.0, 5.0, (n_runs, n_per_arm))
    y = rng.normal(10.0, 8.0, (n_runs, n_per_arm))
    w = welch(n_per_arm, x.mean(1), x.var(1, ddof=1), n_per_arm, y.mean(1), y.var(1, ddof=1), alpha)
    s_t = rng.binomial(n_per_arm, 0.35, n_runs)
    s_c = rng.binomial(n_per_arm, 0.30, n_runs)
    mn = miettinen_nurminen(s_t, n_per_arm, s_c, n_per_arm, alpha)
    return covers(w, 1.0).mean(), covers(mn, 0.05).mean()


def covers(interval, truth):
    """Whether each interval (``ci_low``, ``ci_high``) holds ``truth``."""
    return (interval.ci_low <= truth) & (truth <= interval.ci_high)


# 3000 runs: MC s.e. of a coverage near 0.95 is sqrt(.95 * .05 / 3000) = 0.0040.
N_RUNS_CI = 3000


@pytest.mark.parametrize("scenario", COVERAGE_SCENARIOS, ids=[s[0] for s in COVERAGE_SCENARIOS])
def test_cs_covers_at_all_looks_simultaneously(scenario):
    rate, _ = cs_simultaneous_coverage(scenario, N_RUNS_CI, seed=23)
    se_target = np.sqrt(0.95 * 0.05 / N_RUNS_CI)
    assert rate >= 0.95 - 3 * se_target


def test_fixed_horizon_intervals_cover_about_95_percent():
    welch, wald = fixed_horizon_coverage(n_per_arm=400, n_runs=N_RUNS_CI, seed=29)
    se_target = np.sqrt(0.95 * 0.05 / N_RUNS_CI)
    assert abs(welch - 0.95) <= 3 * se_target
    assert abs(wald - 0.95) <= 3 * se_target


# Repeated significance tests at nominal level 0.05 on accumulating normal data with equal
# increments: probability of at least one rejection in K looks under the null (Armitage,
# McPherson and Rowe 1969; Jennison and Turnbull 2000, "Group Sequential Methods with
# Applications to Clinical Trials", Table 1.1).
REPEATED_LOOKS_ERROR = {5: 0.142, 10: 0.193, 20: 0.248}


def test_fixed_horizon_interval_under_nightly_looks_misses_as_often_as_repeated_tests_predict():
    """Contrast: the 95% Welch interval re-read every night misses the truth at some look as
    often as the published repeated-testing error says, far above 5%."""
    rng = np.random.default_rng(31)
    p = normal_paths(rng, N_RUNS_CI, N_DAYS, 50, 11.0, 10.0, 5.0, poisson=False)
    nightly = welch(p.n_t, p.mean_t, p.var_t, p.n_c, p.mean_c, p.var_c)
    miss = ~covers(nightly, 1.0)
    for looks, published in REPEATED_LOOKS_ERROR.items():
        rate = miss[:, :looks].any(axis=1).mean()
        se = np.sqrt(published * (1 - published) / N_RUNS_CI)
        assert abs(rate - published) <= 3 * se, (looks, rate, published)
