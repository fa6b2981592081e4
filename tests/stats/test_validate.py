"""The shared helpers every statistics function returns its fields through."""

from __future__ import annotations

import numpy as np

from zcl_assets.stats._validate import out


def test_out_gives_float64_scalars_for_scalars_and_float64_arrays_for_arrays():
    # integer and boolean input alike come back as float64 unless another dtype is asked for
    scalar = out(3)
    assert type(scalar) is np.float64 and scalar == 3.0
    arr = out([[1, 2], [3, 4]])
    assert arr.dtype == np.float64 and arr.shape == (2, 2)
    assert out(np.array([1.0, None], dtype=object)).dtype == np.float64 and np.isnan(out([1.0, None])[1])
    flags = out([True, False], dtype=bool)
    assert flags.dtype == bool and flags.tolist() == [True, False]
