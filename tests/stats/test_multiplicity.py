"""Tests for zcl_assets.stats.multiplicity."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from zcl_assets.stats.multiplicity import alpha_slot, familywise_error, holm


def test_holm_r_reference():
    # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") -> 0.05 0.08 0.09 0.09 0.09
    res = holm([0.01, 0.02, 0.03, 0.04, 0.05])
    np.testing.assert_allclose(res.adjusted, [0.05, 0.08, 0.09, 0.09, 0.09], atol=1e-12)
    np.testing.assert_array_equal(res.reject, [True, False, False, False, False])


def test_holm_nan_is_not_counted():
    # with the NaN left out, the family has 3 tests: 0.01*3, 0.03*2 -> 0.06, 0.04*1 -> 0.06
    res = holm([0.01, np.nan, 0.04, 0.03])
    np.testing.assert_allclose(res.adjusted, [0.03, np.nan, 0.06, 0.06], atol=1e-12)
    np.testing.assert_array_equal(res.reject, [True, False, False, False])
    # statsmodels alone counts the NaN as a test (the trap this guards against)
    _, sm_adj, _, _ = multipletests([0.01, np.nan, 0.04, 0.03], method="holm")
    assert not np.allclose(sm_adj[0], 0.03)


def test_holm_rows_are_separate_families():
    res = holm([[0.01, 0.04], [0.5, np.nan], [np.nan, np.nan]])
    np.testing.assert_allclose(res.adjusted[0], [0.02, 0.04])
    assert res.adjusted[1, 0] == 0.5 and np.isnan(res.adjusted[1, 1])
    assert np.isnan(res.adjusted[2]).all() and not res.reject[2].any()
    assert holm(0.02).adjusted == 0.02  # a single test is unadjusted


def test_holm_invalid():
    with pytest.raises(ValueError):
        holm([0.1, 1.2])
    with pytest.raises(ValueError):
        holm([0.1], alpha=0)


def test_familywise_error_design_reference():
    # DESIGN section 6: eight independent tests at 0.05 -> 0.337
    assert familywise_error(0.05, 8) == pytest.approx(1 - 0.95**8, rel=1e-12)
    assert round(float(familywise_error(0.05, 8)), 3) == 0.337
    assert familywise_error(0.05, 0) == 0.0


def test_alpha_slot():
    assert alpha_slot(0.05, 4) == pytest.approx(0.0125)
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError):
            alpha_slot(0.05, bad)
    with pytest.raises(ValueError):
        alpha_slot(1.0, 3)
