"""Segment breakdowns of the primary metric (``analysis/breakdowns.py``), against hand figures and statsmodels."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.proportion import test_proportions_2indep as score_test_2indep

from zcl_assets.analysis.breakdowns import LABEL, segment_breakdowns

NIGHT = dt.date(2026, 10, 21)


def _counts(rows):
    return pl.DataFrame(rows, schema={"experiment_id": pl.String, "arm": pl.String, "is_control": pl.Boolean,
                                      "dimension": pl.String, "segment": pl.String, "sessions": pl.Int64,
                                      "successes": pl.Int64}, orient="row")


def test_each_segment_is_a_score_test_and_the_segments_of_a_dimension_share_one_bh_family():
    counts = _counts([
        ("e", "control", True, "model", "a", 400, 200), ("e", "treatment", False, "model", "a", 400, 260),
        ("e", "control", True, "model", "b", 300, 150), ("e", "treatment", False, "model", "b", 310, 160),
        ("e", "control", True, "model", "c", 200, 90), ("e", "treatment", False, "model", "c", 210, 115),
        ("e", "control", True, "budget", "50000.0", 900, 440), ("e", "treatment", False, "budget", "50000.0", 920, 535),
        ("e", "treatment", False, "model", "d", 12, 7),  # no control session on model d
    ])
    out = segment_breakdowns(counts, NIGHT)
    assert out.height == 5 and set(out.get_column("label")) == {LABEL}
    rows = {(r["dimension"], r["segment"]): r for r in out.to_dicts()}
    for (dim, seg), (x_t, n_t, x_c, n_c) in {("model", "a"): (260, 400, 200, 400), ("model", "b"): (160, 310, 150, 300),
                                              ("model", "c"): (115, 210, 90, 200),
                                              ("budget", "50000.0"): (535, 920, 440, 900)}.items():
        r = rows[(dim, seg)]
        assert r["difference"] == pytest.approx(x_t / n_t - x_c / n_c, abs=1e-12)
        # the Miettinen-Nurminen score test at margin 0 is statsmodels' score test (its p agrees at margin 0)
        assert r["p"] == pytest.approx(score_test_2indep(x_t, n_t, x_c, n_c, method="score").pvalue, rel=1e-8)
        assert r["ci_low"] < r["difference"] < r["ci_high"]
    assert rows[("model", "d")]["n_control"] == 0 and rows[("model", "d")]["p"] is None
    # Benjamini-Hochberg by hand over the four model segments (d counts as p = 1): sorted p_(1..4),
    # adjusted p_(i) = min over j >= i of p_(j) x 4 / j
    p = np.array([rows[("model", s)]["p"] for s in "abc"] + [1.0])
    order = np.argsort(p)
    ranked = p[order] * 4 / np.arange(1, 5)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    expected = np.empty(4)
    expected[order] = np.minimum(adjusted, 1.0)
    for s, e in zip("abcd", expected):
        assert rows[("model", s)]["p_bh"] == pytest.approx(e, rel=1e-12)
    # a dimension of one segment is its own family: nothing to adjust
    assert rows[("budget", "50000.0")]["p_bh"] == pytest.approx(rows[("budget", "50000.0")]["p"], rel=1e-12)


def test_several_treatment_arms_each_get_their_own_family():
    counts = _counts([
        ("e", "c", True, "model", "a", 100, 50), ("e", "t1", False, "model", "a", 100, 70),
        ("e", "t2", False, "model", "a", 100, 52), ("e", "c", True, "model", "b", 100, 40),
        ("e", "t1", False, "model", "b", 100, 41), ("e", "t2", False, "model", "b", 100, 60),
    ])
    out = segment_breakdowns(counts, NIGHT)
    assert out.select("treatment_arm", "segment").rows() == [("t1", "a"), ("t1", "b"), ("t2", "a"), ("t2", "b")]
    for arm in ("t1", "t2"):
        mine = out.filter(pl.col("treatment_arm") == arm)
        p = sorted(mine.get_column("p").to_list())
        assert sorted(mine.get_column("p_bh").to_list()) == pytest.approx([min(p[0] * 2, p[1]), p[1]], rel=1e-12)


def test_nothing_to_break_down_gives_an_empty_table():
    assert segment_breakdowns(_counts([]), NIGHT).height == 0
