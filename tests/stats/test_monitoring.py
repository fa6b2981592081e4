"""Tests for zcl_assets.stats.monitoring: the mixture test that a rate exceeds a threshold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from zcl_assets.stats.monitoring import rate_exceeds


def mixture_e_value(x, n, p0):
    """The docstring's definition, integrated numerically (scipy.integrate.quad)."""
    integral, _ = integrate.quad(lambda q: q**x * (1 - q) ** (n - x), p0, 1, epsabs=0, epsrel=1e-12)
    return integral / (1 - p0) / (p0**x * (1 - p0) ** (n - x))


@pytest.mark.parametrize("x,n", [(3, 20), (30, 100), (1, 40), (12, 60)])
def test_the_e_value_is_the_uniform_mixture_of_likelihood_ratios(x, n):
    res = rate_exceeds(x, n, threshold=0.05)
    expected = mixture_e_value(x, n, 0.05)
    assert float(res.e_value) == pytest.approx(expected, rel=1e-8)
    assert float(res.pvalue) == pytest.approx(min(1.0, 1 / expected), rel=1e-8)


def test_no_violation_gives_an_e_value_below_one_and_a_p_value_of_one():
    # x = 0: E = B(1, n + 1) I_{1-p0}(n + 1, 1) / (1 - p0)^(n + 1) = 1 / (n + 1), so 1/E > 1 and p = 1.
    res = rate_exceeds([0, 0], [10, 0], threshold=0.05)
    assert res.e_value == pytest.approx([1 / 11, 1.0], rel=1e-10)
    assert np.array_equal(res.pvalue, [1.0, 1.0])
