"""Segment breakdowns of the primary metric (``analysis/breakdowns.py``), against hand figures and statsmodels."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.proportion import test_proportions_2indep as score_test_2indep
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from tests.analysis.experience_days import build_experience_days
from zcl_assets.analysis.breakdowns import LABEL, METHOD, WELCH_METHOD, segment_breakdowns

NIGHT = dt.date(2026, 10, 21)


SCHEMA = {"experiment_id": pl.String, "arm": pl.String, "is_control": pl.Boolean, "dimension": pl.String,
          "segment": pl.String, "metric": pl.String, "sessions": pl.Int64, "successes": pl.Int64, "mean": pl.Float64,
          "variance": pl.Float64}


def _counts(rows):
    """Rows of a rate's segments: (experiment, arm, is control, dimension, segment, sessions, successes), with
    the mean x / n and the sample variance of the 0/1 values, n p (1 - p) / (n - 1), as the SQL gives them."""
    return pl.DataFrame([(e, a, c, d, s, "success", n, x, x / n, n * (x / n) * (1 - x / n) / (n - 1))
                         for e, a, c, d, s, n, x in rows], schema=SCHEMA, orient="row")


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


def test_a_continuous_primary_is_broken_down_by_welch_t_with_bh_across_segments():
    """Time in minutes in three model segments, from the sessions' own values: each segment's difference,
    interval and p are statsmodels' Welch comparison of the raw values; BH by hand."""
    rng = np.random.default_rng(11)
    raw = {(arm, seg): rng.normal(30 - (2.0 if arm == "treatment" and seg != "c" else 0.0), 8, size)
           for arm in ("control", "treatment") for seg, size in (("a", 60), ("b", 45), ("c", 30))}
    counts = pl.DataFrame([("e", arm, arm == "control", "model", seg, "time_minutes", v.size, None, v.mean(), v.var(ddof=1))
                           for (arm, seg), v in raw.items()], schema=SCHEMA, orient="row")
    out = segment_breakdowns(counts, NIGHT)
    rows = {r["segment"]: r for r in out.to_dicts()}
    assert set(rows) == {"a", "b", "c"} and set(out.get_column("method")) == {WELCH_METHOD}
    for seg, r in rows.items():
        t, c = raw[("treatment", seg)], raw[("control", seg)]
        compared = CompareMeans(DescrStatsW(t), DescrStatsW(c))
        low, high = compared.tconfint_diff(alpha=0.05, usevar="unequal")
        assert r["difference"] == pytest.approx(t.mean() - c.mean(), rel=1e-12)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((low, high), rel=1e-9)
        assert r["p"] == pytest.approx(compared.ttest_ind(usevar="unequal")[1], rel=1e-9)
        assert (r["mean_control"], r["sd_treatment"]) == pytest.approx((c.mean(), t.std(ddof=1)), rel=1e-12)
        assert (r["x_control"], r["x_treatment"]) == (None, None) and r["label"] == LABEL
    # BH over the three segments: p_(i) x 3 / i, made monotone from the largest down
    p = np.array([rows[s]["p"] for s in "abc"])
    order = np.argsort(p)
    adjusted = np.minimum.accumulate((p[order] * 3 / np.arange(1, 4))[::-1])[::-1]
    for s, e in zip(np.array(list("abc"))[order], np.minimum(adjusted, 1.0)):
        assert rows[s]["p_bh"] == pytest.approx(e, rel=1e-12)
    # scipy's own Welch test agrees on the p of the first segment
    a_t, a_c = raw[("treatment", "a")], raw[("control", "a")]
    assert rows["a"]["p"] == pytest.approx(stats.ttest_ind(a_t, a_c, equal_var=False).pvalue, rel=1e-9)


def test_a_rate_keeps_the_score_test():
    out = segment_breakdowns(_counts([("e", "c", True, "model", "a", 100, 50), ("e", "t", False, "model", "a", 100, 70)]),
                             NIGHT)
    r = out.row(0, named=True)
    assert r["method"] == METHOD and (r["x_control"], r["x_treatment"]) == (50, 70)
    assert (r["mean_control"], r["mean_treatment"]) == (0.5, 0.7) and r["sd_control"] is None


def test_the_sql_counts_each_segments_capped_values_exactly():
    """``segment_counts`` on a small warehouse (its experience's daily counts built by the production SQL): time in minutes capped at 60 (a value of 90 counts as 60), an
    unverified session and one without a time left out; mean and sample variance of the capped values by
    numpy, and the same figures whatever the order of the rows (exact sums: a rerun is bit-identical)."""
    import duckdb

    from zcl_assets.analysis.breakdowns import segment_counts

    at = dt.datetime(2026, 10, 20, 9, tzinfo=dt.timezone.utc)
    values = {("control", "m1"): [10.5, 20.25, 90.0, 33.333], ("treatment", "m1"): [12.0, 14.5, 61.0],
              ("control", "m2"): [5.0, 7.0], ("treatment", "m2"): [6.5]}
    rows, sessions = [], []
    for (arm, model), times in values.items():
        for k, minutes in enumerate(times + [40.0, None]):
            sid = f"{arm}-{model}-{k}"
            verified = k != len(times)  # the 40-minute session is not verified; the last one has no time
            rows.append((sid, "e", arm, arm == "control", verified, minutes, at))
            sessions.append((sid, model, 1000.0))
    capped = {key: [min(v, 60.0) for v in times] for key, times in values.items()}
    for order in (1, -1):
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        con.register("x", pl.DataFrame(rows[::order], schema={"session_id": pl.String, "experiment_id": pl.String,
                                                              "arm": pl.String, "is_control": pl.Boolean, "verified": pl.Boolean,
                                                              "time_minutes": pl.Float64, "assigned_at": pl.Datetime("us", "UTC")},
                                       orient="row"))
        con.register("s", pl.DataFrame(sessions[::order], schema={"session_id": pl.String, "model": pl.String,
                                                                  "budget": pl.Float64}, orient="row"))
        con.execute("CREATE TABLE experience AS SELECT x.*, s.model, s.budget, NULL::BOOLEAN AS success, "
                    "NULL::DOUBLE AS tokens, NULL::DOUBLE AS score, x.assigned_at AS recorded_at, 1 AS authoritative_outcomes, "
                    "NULL::VARCHAR AS evaluator_id, NULL::VARCHAR AS evaluator_version, NULL::VARCHAR AS evaluator_kind "
                    "FROM x JOIN s USING (session_id)")
        con.execute("CREATE TABLE staged_experiments AS SELECT 'e' AS experiment_id, 'time_minutes' AS primary_metric, "
                    "'{\"time_minutes\": 60}' AS metric_caps")
        build_experience_days(con)  # the daily counts the breakdowns sum, as a night keeps them
        got = {(r["arm"], r["segment"]): r for r in segment_counts(con, at.date()).filter(
            pl.col("dimension") == "model").to_dicts()}
        for key, times in capped.items():
            r = got[key]
            assert (r["sessions"], r["successes"], r["metric"]) == (len(times), None, "time_minutes")
            assert r["mean"] == pytest.approx(np.mean(times), rel=1e-12)
            if len(times) > 1:
                assert r["variance"] == pytest.approx(np.var(times, ddof=1), rel=1e-9)
            else:
                assert r["variance"] is None
        if order == 1:
            first = {k: (r["mean"], r["variance"]) for k, r in got.items()}
        else:
            assert {k: (r["mean"], r["variance"]) for k, r in got.items()} == first  # bit for bit
