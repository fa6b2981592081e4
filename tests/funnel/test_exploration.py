"""The exploration monitor: Wilson intervals and the status against the configured range."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zcl_assets.funnel.exploration import STATUSES, exploration_share


def wilson(x: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson (1927) score interval by hand: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    p = x / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


@pytest.mark.parametrize(("explored", "sessions"), [(30, 100), (45, 100), (12, 100), (0, 20), (20, 20)])
def test_interval_is_wilsons(explored, sessions):
    r = exploration_share(explored, sessions, 0.2, 0.5, 0.4)
    low, high = wilson(explored, sessions)
    assert r.share == pytest.approx(explored / sessions)
    assert (r.ci_low, r.ci_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))


def test_status_against_base_rate_and_cap():
    # 85 of 100 explored: Wilson lower end 0.767 > cap 0.4
    assert exploration_share(85, 100, 0.2, 0.5, 0.4).status == "above_cap"
    # 5 of 100: upper end 0.112 < base 0.2
    assert exploration_share(5, 100, 0.2, 0.5, 0.4).status == "below_base"
    # 45 of 100: the interval [0.356, 0.548] reaches below the cap: no warning
    assert exploration_share(45, 100, 0.2, 0.5, 0.4).status == "within"
    # the expected top is min(cap, base + multiplier): 0.2 + 0.1 = 0.3 below the cap
    assert exploration_share(45, 100, 0.2, 0.1, 0.4).rate_high == pytest.approx(0.3)
    assert exploration_share(0, 0, 0.2, 0.5, 0.4).status == "no_sessions"


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_status_is_always_one_of_the_known_ones(pair):
    explored, sessions = pair
    r = exploration_share(explored, sessions, 0.2, 0.5, 0.4)
    assert r.status in STATUSES
    if sessions:
        assert r.ci_low <= r.share <= r.ci_high


@pytest.mark.parametrize(("explored", "sessions"), [(-1, 10), (11, 10), (0, -1)])
def test_impossible_counts_are_refused(explored, sessions):
    with pytest.raises(ValueError):
        exploration_share(explored, sessions, 0.2, 0.5, 0.4)
