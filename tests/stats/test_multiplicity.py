"""Tests for zcl_assets.stats.multiplicity."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from zcl_assets.stats.multiplicity import alpha_slot, holm_steps


def test_holm_r_reference():
    # R: p.adjust(c(0.005, 0.02, 0.03, 0.04, 0.05), "holm") -> 0.025 0.08 0.09 0.09 0.09
    res = holm_steps([0.005, 0.02, 0.03, 0.04, 0.05], np.zeros(5), 0.05)
    np.testing.assert_allclose(res.adjusted, [0.025, 0.08, 0.09, 0.09, 0.09], atol=1e-12)
    np.testing.assert_array_equal(res.reject, [True, False, False, False, False])
    # a p-value exactly at its step is not rejected (p < level, as a CS read at the level
    # excludes zero), where R's adjusted p <= alpha would reject: 0.01 against 0.05 / 5
    assert not holm_steps([0.01, 0.02], np.zeros(2), 0.02).reject[0]


def test_holm_counts_an_undefined_p_as_one():
    # DESIGN section 6: an undefined p still counts in the family, as p = 1. Family of 4:
    # R: p.adjust(c(0.01, 1, 0.04, 0.03), "holm") -> 0.04 1.00 0.09 0.09
    res = holm_steps([0.01, np.nan, 0.04, 0.03], np.zeros(4), 0.05)
    np.testing.assert_allclose(res.adjusted, [0.04, 1.0, 0.09, 0.09], atol=1e-12)
    np.testing.assert_array_equal(res.reject, [True, False, False, False])
    assert res.family_size.tolist() == [4] * 4
    # leaving the NaN out would give 0.03, 0.06, 0.06: less conservative
    _, without, _, _ = multipletests([0.01, 0.04, 0.03], method="holm")
    np.testing.assert_allclose(without, [0.03, 0.06, 0.06])


def test_holm_families_are_separate_and_a_single_test_is_unadjusted():
    res = holm_steps([0.01, 0.04, 0.5, np.nan, 0.02], [0, 0, 1, 1, 2], 0.05)
    # R: p.adjust(c(0.01, 0.04), "holm") -> 0.02 0.04; p.adjust(c(0.5, 1), "holm") -> 1 1
    np.testing.assert_allclose(res.adjusted, [0.02, 0.04, 1.0, 1.0, 0.02])
    assert res.family_size.tolist() == [2, 2, 2, 2, 1]


def test_holm_refuses_a_p_value_outside_the_unit_interval_or_families_of_another_length():
    with pytest.raises(ValueError, match="p-values must lie in"):
        holm_steps([0.1, 1.2], [0, 0], 0.05)
    with pytest.raises(ValueError, match="same length"):
        holm_steps([0.1, 0.2], [0], 0.05)


def test_alpha_slot():
    assert alpha_slot(0.05, 4) == pytest.approx(0.0125)
    # one share per registration, as the plans read them; an alpha outside (0, 1) has none
    np.testing.assert_allclose(alpha_slot([0.05, 0.1, 1.0], 4), [0.0125, 0.025, np.nan])
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="k_slots must be a positive integer"):
            alpha_slot(0.05, bad)


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
