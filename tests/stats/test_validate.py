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


def test_bad_counts_are_refused_with_the_names_of_the_arguments():
    import pytest

    from zcl_assets.stats.lift import relative_lift
    from zcl_assets.stats.monitoring import rate_exceeds

    with pytest.raises(ValueError, match="^n must be non-negative$"):
        rate_exceeds(1, -3)
    with pytest.raises(ValueError, match="^x must not exceed n$"):
        rate_exceeds(5, 3)
    with pytest.raises(ValueError, match="^n_c must be non-negative$"):
        relative_lift(1.0, 1.0, 10, 1.0, 1.0, -1)
