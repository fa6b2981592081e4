"""Tests for zcl_assets.stats.lift."""

import numpy as np
import pytest

from zcl_assets.stats.lift import relative_lift


def test_relative_lift_hand_computation():
    # p_t = 0.6, p_c = 0.5, n = 100 each, binary var = p (1 - p):
    # se_log = sqrt(0.24/(100*0.36) + 0.25/(100*0.25)) = sqrt(1/150 + 1/100) = 0.129099445
    # ci = exp(log 1.2 -/+ 1.959963985 * se) - 1 = (-0.0682667387, 0.5455067022)
    res = relative_lift(0.6, 0.24, 100, 0.5, 0.25, 100)
    assert res.lift == pytest.approx(0.2, abs=1e-12)
    assert res.se_log == pytest.approx(0.129099445, abs=1e-9)
    assert res.ci_low == pytest.approx(-0.0682667387, abs=1e-9)
    assert res.ci_high == pytest.approx(0.5455067022, abs=1e-9)


def test_relative_lift_swap_is_reciprocal():
    a = relative_lift(12.0, 9.0, 50, 10.0, 4.0, 80)
    b = relative_lift(10.0, 4.0, 80, 12.0, 9.0, 50)
    assert 1 + b.lift == pytest.approx(1 / (1 + a.lift))
    assert 1 + b.ci_low == pytest.approx(1 / (1 + a.ci_high))
    assert 1 + b.ci_high == pytest.approx(1 / (1 + a.ci_low))


def test_relative_lift_degenerate():
    res = relative_lift([0.0, 0.5, 0.5, np.nan, 1.0], [0, 0.25, 0.25, 0.25, 0.0], [10, 0, 10, 10, 10],
                        [0.5, 0.5, -1.0, 0.5, 1.0], [0.25, 0.25, 1.0, 0.25, 0.0], [10, 10, 10, 10, 10])
    assert np.isnan(res.lift[:4]).all() and np.isnan(res.ci_low[:4]).all()
    # all successes in both arms: lift 0 but no interval (zero variance)
    assert res.lift[4] == 0.0 and np.isnan(res.ci_low[4]) and np.isnan(res.ci_high[4])
    with pytest.raises(ValueError):
        relative_lift(0.5, -0.1, 10, 0.5, 0.25, 10)
    with pytest.raises(ValueError):
        relative_lift(0.5, 0.25, 10, 0.5, 0.25, 10, alpha=0)


@pytest.mark.parametrize("n_t, n_c", [(10, 0), (0, 10)])
def test_a_lift_against_an_empty_arm_is_undefined(n_t, n_c):
    res = relative_lift(1.2, 1.0, n_t, 1.0, 1.0, n_c)
    assert np.isnan([res.lift, res.ci_low, res.ci_high, res.se_log]).all()
