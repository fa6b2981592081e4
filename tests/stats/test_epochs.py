"""Running quantities along the nights, restarted at each epoch (zcl_assets.stats.epochs), by hand."""

from __future__ import annotations

import numpy as np

from zcl_assets.stats.epochs import epoch_start, running_pvalue, within_epoch

# Two experiments over four nights: "a" looked at nights 0-3 with a reopen at night 2 (epoch 1);
# "b" not looked at on night 0, epoch 0 after.
EPOCH = np.array([[0, 0, 1, 1], [-1, 0, 0, 0]])


def test_running_operations_restart_at_each_epoch_and_leave_unlooked_nights_at_the_identity():
    assert within_epoch(np.add, np.ones((2, 4)), EPOCH, 0.0).tolist() == [[1.0, 2.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]]
    values = np.array([[5.0, 1.0, 3.0, 2.0], [9.0, 1.0, 3.0, 2.0]])
    assert within_epoch(np.maximum, values, EPOCH, 0.0).tolist() == [[5.0, 5.0, 3.0, 3.0], [0.0, 1.0, 3.0, 3.0]]
    # extra axes ride along (counts per arm), integers come back as floats
    per_arm = within_epoch(np.add, np.ones((2, 4, 3), dtype=np.int64), EPOCH, 0)
    assert per_arm.dtype == np.float64 and per_arm[..., 2].tolist() == [[1.0, 2.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]]


def test_each_night_knows_the_night_its_epoch_started_across_unlooked_nights():
    # "a": epoch 0 on night 0, no look on night 1 (it continues epoch 0), epoch 0 on night 2, a
    # reopen (epoch 1) on night 3: starts 0, 0, 0, 3. "b": no look on night 0, epoch 0 on nights 1
    # and 2, no look on night 3 (continuing it): starts 0, 1, 1, 1. Each row is read on its own.
    assert epoch_start(np.array([[0, -1, 0, 1], [-1, 0, 0, -1]])).tolist() == [[0, 0, 0, 3], [0, 1, 1, 1]]
    assert epoch_start(EPOCH).tolist() == [[0, 0, 2, 2], [0, 1, 1, 1]]


def test_a_night_without_evidence_leaves_the_running_p_value_where_it_was():
    # A NaN log e-value is no evidence: before any evidence p is 1, after it the running maximum
    # stands (p = 1/4 after e = 4); a new epoch starts again at 1 (then 1/2 after e = 2).
    nan = np.nan
    log_e = np.array([[nan, np.log(4), nan, np.log(2)], [nan, nan, np.log(2), nan]])
    np.testing.assert_allclose(running_pvalue(log_e, EPOCH), [[1, 0.25, 1, 0.5], [1, 1, 0.5, 0.5]], rtol=1e-12)
    # an e-value below 1 never makes p exceed 1
    assert running_pvalue(np.array([[np.log(0.5)]]), np.array([[0]])).tolist() == [[1.0]]
