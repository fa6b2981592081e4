"""One registry of metric kinds; one catalogue of metric names."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from contracts.tables import METRICS
from zcl_assets.analysis.metrics import (
    BINARY_PROPORTION,
    CATALOGUE,
    CONTINUOUS_MEAN,
    KINDS,
    RATIO_OF_SUMS,
    ArmStats,
    counts_successes,
    kind_estimand,
    metric_spec,
    primary_kind_column,
    several_sessions_a_unit,
)

ROOT = Path(__file__).resolve().parents[2]


def arm(n, mean=np.nan, m2=np.nan, variance=np.nan, successes=np.nan, **ratio):
    r = {k: np.asarray([ratio.get(k, np.nan)], float) for k in ("sum_y", "sum_m", "c_yy", "c_mm", "c_ym")}
    return ArmStats(np.asarray([n], float), np.asarray([mean], float), np.asarray([m2], float),
                    np.asarray([variance], float), np.asarray([successes], float), np.asarray([n], float), **r)


def test_every_kind_says_everything_a_comparison_needs():
    assert set(KINDS) == {"binary_proportion", "continuous_mean", "ratio_of_sums"}
    for kind in KINDS.values():
        assert kind.estimand and kind.sufficient_statistics and kind.descriptive and kind.cs_variance and kind.plan
        assert callable(kind.arm_variance) and callable(kind.describe)
    assert BINARY_PROPORTION.clip == (-1.0, 1.0) and CONTINUOUS_MEAN.clip is None and RATIO_OF_SUMS.clip is None
    # the formula of stats.power that plans each kind; the ratio of sums never decides, so is never planned
    assert (BINARY_PROPORTION.power_formula, CONTINUOUS_MEAN.power_formula, RATIO_OF_SUMS.power_formula) == (
        "binary", "continuous", None)


def test_the_catalogue_covers_every_contract_metric_and_decides_the_kind():
    assert set(METRICS) <= set(CATALOGUE)
    assert CATALOGUE["success"].binary and not CATALOGUE["tokens"].binary
    assert CATALOGUE["time_minutes"].cap == "time_minutes" and CATALOGUE["time_minutes"].direction == "decrease"
    assert metric_spec("metric_3").binary is False  # names of aggregate exports
    assert (metric_spec("metric_3").direction, metric_spec("metric_3").cap) == ("increase", None)


def test_the_primary_kind_of_every_design():
    # DESIGN section 6: a binary metric is a proportion of units unless each unit is a user with
    # several sessions (then a mean of per-user rates); an aggregate export counts each unit once.
    rows = [(metric, unit, spu, export) for metric in ("success", "score", "metric_3") for unit in ("session", "user")
            for spu in ("one", "many") for export in (False, True)]
    designs = pl.DataFrame(rows, schema=["metric", "randomization_unit", "sessions_per_unit", "aggregate_export"],
                           orient="row")
    got = designs.select(primary_kind_column(pl.col("metric"), several_sessions_a_unit(pl.col("aggregate_export"))))
    want = [BINARY_PROPORTION.name if metric == "success" and not (unit == "user" and spu == "many" and not export)
            else CONTINUOUS_MEAN.name for metric, unit, spu, export in rows]
    assert got.to_series().to_list() == want


def test_no_code_outside_the_registry_asks_whether_a_metric_is_binary():
    # "is it binary" is asked of the registry (a kind's clip and power formula, the catalogue's
    # counts_successes), never by a metric's name, the list of binary metrics, a kind's name
    # or a column that happens to be null
    pattern = re.compile(r"""==\s*["'](success|binary_proportion)["']|["']success["']\s*==|BINARY_METRICS|"""
                         r"""BINARY_PROPORTION\.name|successes_control.{0,20}null_count""")
    offenders = []
    for folder in ("zcl_assets/analysis", "zcl_assets/defs", "zcl_assets/reports", "zcl_assets/stats"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name != "metrics.py" and pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_cs_variances_by_kind():
    # binary: p (1 - p); mean: m2 / (n - 1); ratio: n x delta-method variance (Deng et al. 2018)
    assert BINARY_PROPORTION.arm_variance(arm(10, mean=0.3))[0] == pytest.approx(0.21)
    assert CONTINUOUS_MEAN.arm_variance(arm(5, mean=2.0, m2=8.0))[0] == pytest.approx(2.0)
    assert CONTINUOUS_MEAN.arm_variance(arm(5, mean=2.0, variance=3.0))[0] == pytest.approx(3.0)
    # per-user (Y, M): (1, 2), (3, 1), (2, 3): the delta method by hand
    y, m = np.array([1.0, 3.0, 2.0]), np.array([2.0, 1.0, 3.0])
    r = y.sum() / m.sum()
    var_ratio = (np.var(y, ddof=1) - 2 * r * np.cov(y, m)[0, 1] + r * r * np.var(m, ddof=1)) / (3 * m.mean() ** 2)
    a = arm(3, sum_y=y.sum(), sum_m=m.sum(), c_yy=((y - y.mean()) ** 2).sum(), c_mm=((m - m.mean()) ** 2).sum(),
            c_ym=((y - y.mean()) * (m - m.mean())).sum())
    assert RATIO_OF_SUMS.arm_variance(a._replace(mean=np.asarray([r])))[0] == pytest.approx(3 * var_ratio, rel=1e-12)


def test_the_estimand_and_the_success_counting_come_from_the_registry():
    # every kind's estimand by name; a binary metric counts successes whatever its kind (a user's
    # sessions averaged included), a continuous one or an export's metric_3 never
    frame = pl.DataFrame({"kind": list(KINDS), "metric": ["success", "success", "tokens"]})
    got = frame.select(kind_estimand(pl.col("kind")), counts_successes(pl.col("metric")).alias("counts"))
    assert got.get_column("kind").to_list() == [k.estimand for k in KINDS.values()]
    assert got.get_column("counts").to_list() == [True, True, False]
    assert pl.select(counts_successes(pl.lit("metric_3"))).item() is False


def _arms(ns, means):
    n, p = np.asarray(ns, float), np.asarray(means, float)
    nan = np.full(n.shape, np.nan)
    return ArmStats(n, p, nan, nan, np.round(n * p), n, nan, nan, nan, nan, nan)


def test_binary_descriptive_figures_row_by_row_with_undefined_rows_left_nan():
    # rows: a large table, a small table (an expected cell below 5: Fisher beside the score
    # test), an empty treatment arm, a missing control proportion, and a table whose smallest
    # expected cell is exactly 5 (20 x 10 / 40: not small)
    t = _arms([800, 12, 0, 50, 20], [0.56, 7 / 12, np.nan, 0.4, 0.3])
    c = _arms([1200, 12, 40, 50, 20], [0.5, 2 / 12, 0.3, np.nan, 0.2])
    d = BINARY_PROPORTION.describe(t, c)
    from statsmodels.stats.proportion import test_proportions_2indep

    for k, (x1, n1, x2, n2) in enumerate([(448, 800, 600, 1200), (7, 12, 2, 12)]):
        assert d.diff[k] == pytest.approx(x1 / n1 - x2 / n2, rel=1e-12)
        assert d.p_value[k] == pytest.approx(test_proportions_2indep(x1, n1, x2, n2, method="score").pvalue, rel=1e-9)
        assert d.ci_low[k] < d.diff[k] < d.ci_high[k]
    assert list(d.ci_method) == list(d.p_method) == ["miettinen_nurminen_score"] * 2 + [None, None, "miettinen_nurminen_score"]
    # Fisher only on the small table (scipy), NaN elsewhere
    from scipy.stats.contingency import odds_ratio

    table = [[7, 5], [2, 10]]
    assert d.fisher_p[1] == pytest.approx(stats.fisher_exact(table).pvalue, rel=1e-9)
    assert d.fisher_or[1] == pytest.approx(odds_ratio(table).statistic, rel=1e-6)
    assert np.isnan(d.fisher_p[[0, 2, 3, 4]]).all() and np.isnan(d.fisher_or[[0, 2, 3, 4]]).all()
    # undefined rows are NaN in float arrays (the look turns them into nulls), never None or 0
    for field in (d.diff, d.ci_low, d.ci_high, d.p_value, d.fisher_p, d.fisher_or, d.fisher_or_low, d.fisher_or_high):
        assert field.dtype == np.float64 and np.isnan(field[2:4]).all()
