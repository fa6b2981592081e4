"""The dense grid of the look: positions, scattering with carry-forward, running sums within epochs.

Every expected array is written out by hand from the few rows each test builds.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl

from zcl_assets.analysis.grid import Grid

DAY0 = dt.date(2026, 10, 1)


def _grid() -> Grid:
    # Two experiments over four nights: "a" looked at nights 0-3 (a reopen at night 2 starts
    # epoch 1), "b" only at nights 1-3. Arms in registration order: a: control, t; b: base, x, y.
    looks = pl.DataFrame({
        "experiment_id": ["a"] * 4 + ["b"] * 3,
        "as_of": [DAY0 + dt.timedelta(days=k) for k in range(4)] + [DAY0 + dt.timedelta(days=k) for k in (1, 2, 3)],
        "epoch": [0, 0, 1, 1, 0, 0, 0],
    })
    segments = pl.DataFrame({"experiment_id": ["a", "a", "b"], "segment": [0, 1, 0], "epoch": [0, 1, 0]})
    arms = pl.DataFrame({"experiment_id": ["a", "a", "b", "b", "b"], "arm": ["t", "control", "y", "base", "x"],
                         "arm_order": [1, 0, 2, 0, 1]})
    metrics = pl.DataFrame({"experiment_id": ["a", "b", "b", "a"], "metric": ["success", "tokens", "success", "success"]})
    return Grid.build(looks, segments, arms, metrics)


def test_positions_of_experiments_nights_arms_and_metrics():
    g = _grid()
    assert g.experiments == ["a", "b"] and g.day0 == DAY0 and g.nights == 4 and g.shape == (2, 4)
    assert g.epoch.tolist() == [[0, 0, 1, 1], [-1, 0, 0, 0]]
    assert g.segment_epoch.tolist() == [[0, 1], [0, -1]]
    assert g.n_arms.tolist() == [2, 3] and g.max_arms == 3
    e = np.array([0, 0, 1, 1, 1, 0, 1])
    names = pl.Series(["control", "t", "base", "x", "y", "x", "nope"])
    assert g.arm(e, names).tolist() == [0, 1, 0, 1, 2, -1, -1]  # registration order; unknown arms -1
    # metrics within an experiment in name order: a: success; b: success, tokens
    assert g.metric(np.array([0, 1, 1, 0, 1]), pl.Series(["success", "success", "tokens", "tokens", "time"])).tolist() \
        == [0, 0, 1, -1, -1]
    assert g.n_metrics == 2
    assert g.e(pl.Series(["b", "zzz", "a"])).tolist() == [1, -1, 0]
    assert g.d(pl.Series([DAY0, DAY0 + dt.timedelta(days=3)])).tolist() == [0, 3]


def test_tensor_carries_cumulative_values_forward_and_keeps_the_latest_of_early_rows():
    g = _grid()
    # rows: a/arm 1 at night 1 (7) and night 3 (9); b/arm 2 before the first night twice
    # (day -3: 2, day -1: 4, the later wins at night 0) and at night 2 (6); an unknown arm (-1)
    # and a row after the last night are left out.
    e = np.array([0, 0, 1, 1, 1, 0, 0])
    j = np.array([1, 1, 2, 2, 2, -1, 0])
    days = np.array([1, 3, -1, -3, 2, 1, 4])
    values = np.array([7.0, 9.0, 4.0, 2.0, 6.0, 100.0, 50.0])
    out = g.tensor((e, j), days, values, (3,))
    assert out.shape == (2, 4, 3)
    assert out[0, :, 1].tolist() == [0.0, 7.0, 7.0, 9.0]  # 0 before the first row, then carried
    assert out[1, :, 2].tolist() == [4.0, 4.0, 6.0, 6.0]
    assert out[0, :, 0].tolist() == [0.0] * 4 and out[0, :, 2].tolist() == [0.0] * 4 and out[1, :, :2].sum() == 0.0


def test_tensor_without_carry_adds_the_rows_of_each_night():
    g = _grid()
    e = np.array([0, 0, 0, 1, -1])
    days = np.array([1, 1, 3, 0, 2])
    out = g.tensor((e,), days, np.array([2.0, 3.0, 4.0, 5.0, 8.0]), (), carry=False)
    assert out.tolist() == [[0.0, 5.0, 0.0, 4.0], [5.0, 0.0, 0.0, 0.0]]


def test_running_sums_restart_at_a_reopen():
    g = _grid()
    run = g.within_epoch(np.add, np.ones((2, 4)), 0.0)
    assert run.tolist() == [[1.0, 2.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]]
    # counts given as integers come back as floats (the running figures of the look are floats)
    counted = g.within_epoch(np.add, np.ones((2, 4), dtype=np.int64), 0)
    assert counted.dtype == np.float64 and counted.tolist() == run.tolist()


def test_a_grid_without_looks_holds_its_arms_experiments_and_no_looked_night():
    none = pl.DataFrame(schema={"experiment_id": pl.String, "as_of": pl.Date, "epoch": pl.Int64})
    segments = pl.DataFrame(schema={"experiment_id": pl.String, "segment": pl.Int64, "epoch": pl.Int64})
    arms = pl.DataFrame({"experiment_id": ["a", "a"], "arm": ["control", "t"], "arm_order": [0, 1]})
    g = Grid.build(none, segments, arms, pl.DataFrame({"experiment_id": ["a"], "metric": ["success"]}))
    assert g.experiments == ["a"] and g.n_arms.tolist() == [2]
    assert (g.epoch == -1).all()
