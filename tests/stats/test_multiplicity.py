"""Tests for zcl_assets.stats.multiplicity."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from zcl_assets.stats.multiplicity import alpha_slot, familywise_error, holm, holm_steps


def test_holm_r_reference():
    # R: p.adjust(c(0.01, 0.02, 0.03, 0.04, 0.05), "holm") -> 0.05 0.08 0.09 0.09 0.09
    res = holm([0.01, 0.02, 0.03, 0.04, 0.05])
    np.testing.assert_allclose(res.adjusted, [0.05, 0.08, 0.09, 0.09, 0.09], atol=1e-12)
    np.testing.assert_array_equal(res.reject, [True, False, False, False, False])


def test_holm_counts_an_undefined_p_as_one():
    # DESIGN section 6: an undefined p still counts in the family, as p = 1. Family of 4:
    # R: p.adjust(c(0.01, 1, 0.04, 0.03), "holm") -> 0.04 1.00 0.09 0.09
    res = holm([0.01, np.nan, 0.04, 0.03])
    np.testing.assert_allclose(res.adjusted, [0.04, np.nan, 0.09, 0.09], atol=1e-12)
    np.testing.assert_array_equal(res.reject, [True, False, False, False])
    # leaving the NaN out would give 0.03, 0.06, 0.06: less conservative
    _, without, _, _ = multipletests([0.01, 0.04, 0.03], method="holm")
    np.testing.assert_allclose(without, [0.03, 0.06, 0.06])


def test_holm_rows_are_separate_families():
    res = holm([[0.01, 0.04], [0.5, np.nan], [np.nan, np.nan]])
    np.testing.assert_allclose(res.adjusted[0], [0.02, 0.04])
    # R: p.adjust(c(0.5, 1), "holm") -> 1 1
    assert res.adjusted[1, 0] == 1.0 and np.isnan(res.adjusted[1, 1])
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


def test_holm_steps_matches_statsmodels_on_many_families_and_reads_levels():
    # Reference: statsmodels multipletests(method="holm") family by family, NaN as 1.
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 200, 1500)
    p = rng.uniform(0, 0.06, 1500) ** 2
    p[rng.random(1500) < 0.05] = np.nan
    res = holm_steps(p, groups, 0.05)
    for g in np.unique(groups):
        i = np.flatnonzero(groups == g)
        reject, adjusted, _, _ = multipletests(np.where(np.isnan(p[i]), 1.0, p[i]), alpha=0.05, method="holm")
        np.testing.assert_allclose(res.adjusted[i], adjusted, rtol=1e-12)
        np.testing.assert_array_equal(res.reject[i], reject)
        assert (res.family_size[i] == i.size).all()
    # A CS read at `level` excludes zero exactly when Holm rejects: p < level.
    defined = ~np.isnan(p)
    np.testing.assert_array_equal((p < res.level)[defined], res.reject[defined])


def test_holm_steps_levels_by_hand():
    # Family of three at alpha 0.03: sorted p 0.001 < 0.03/3 (reject), 0.012 < 0.03/2 (reject),
    # 0.2 >= 0.03/1 (stop). Levels: 0.01, 0.015, 0.03. Second family: 0.02 >= 0.03/2 stops at
    # step 1, so both are read at the first step's level 0.015.
    res = holm_steps([0.2, 0.001, 0.012, 0.02, 0.025], [1, 1, 1, 2, 2], 0.03)
    np.testing.assert_allclose(res.level, [0.03, 0.01, 0.015, 0.015, 0.015])
    np.testing.assert_array_equal(res.reject, [False, True, True, False, False])
    np.testing.assert_allclose(res.adjusted, [0.2, 0.003, 0.024, 0.04, 0.04])
    # the family sizes are counts (the report prints them as whole numbers)
    assert res.family_size.tolist() == [3, 3, 3, 2, 2] and res.family_size.dtype == np.int64


def test_holm_steps_of_no_comparisons_are_empty_arrays_of_their_types():
    r = holm_steps(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0))
    assert [np.asarray(f).shape for f in r] == [(0,)] * 4
    assert np.asarray(r.family_size).dtype == np.int64 and np.asarray(r[2]).dtype == bool


def test_a_single_slot_gets_the_whole_budget():
    # DESIGN section 6: each experiment gets alpha / K; K = 1 is a valid family of one slot
    assert alpha_slot(0.05, 1) == 0.05


@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_holm_of_no_comparisons_keeps_the_empty_shape(shape):
    res = holm(np.zeros(shape))
    assert res.adjusted.shape == shape and res.reject.shape == shape
    assert res.adjusted.dtype == np.float64 and res.reject.dtype == np.bool_
